-- Router feedback belongs to the key that searched (shared/routing/service.py, feedback).

-- The API key that ran the search: only that key's feedback is taken for it.
ALTER TABLE search_telemetry ADD COLUMN IF NOT EXISTS key_id text;

-- Whether a feedback row may step a model: a tenant key's feedback on a search of more than one
-- entity is recorded, and the deployment's model steps only from the admin key's.
ALTER TABLE router_feedback ADD COLUMN IF NOT EXISTS steps_model boolean NOT NULL DEFAULT true;

-- Each search is judged once: the first report of a search stands, later repeats are dropped.
DELETE FROM router_feedback AS later USING router_feedback AS first
 WHERE later.search_id = first.search_id AND later.id > first.id;
CREATE UNIQUE INDEX IF NOT EXISTS router_feedback_search ON router_feedback (search_id);
