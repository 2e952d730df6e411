-- Shadow searches (shared/models/shadow.py, MODEL_SHADOW): a sampled share of the search worker's
-- computed answers, each beside what another model's vectors rank first for the same query and
-- entities, so a deployment sees how a migration would change its answers before it cuts over.
CREATE TABLE model_shadow_searches (
    id            bigserial PRIMARY KEY,
    search_id     text NOT NULL,
    entity_ids    text[] NOT NULL,
    query         text NOT NULL,
    serving_model text NOT NULL,
    shadow_model  text NOT NULL,
    k             integer NOT NULL CHECK (k > 0),
    served        text[] NOT NULL,          -- the chunk ids the serving model's answer gave, best first
    shadow        text[] NOT NULL,          -- the shadow model's vector search's, best first
    overlap       real NOT NULL CHECK (overlap BETWEEN 0 AND 1),  -- share of `served` also in `shadow`
    shadow_ms     real NOT NULL,            -- embedding and searching with the shadow model
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX model_shadow_searches_model_idx ON model_shadow_searches (shadow_model, at);
