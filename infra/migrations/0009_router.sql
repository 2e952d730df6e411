-- The adaptive retrieval router (shared/routing/): model versions, telemetry, feedback.

-- Every version of the router's weights, never changed once written. scope '' is the
-- deployment's model; an entity id is that entity's override (feedback on searches of one
-- entity moves it, starting from the deployment's model). `base` is the trained version
-- feedback updates are bounded around.
CREATE TABLE IF NOT EXISTS router_models (
    version bigserial PRIMARY KEY,
    scope text NOT NULL DEFAULT '',
    weights jsonb NOT NULL,
    source text NOT NULL CHECK (source IN ('builtin', 'train', 'feedback', 'rollback')),
    parent bigint REFERENCES router_models (version),
    base bigint REFERENCES router_models (version),
    note text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS router_models_scope ON router_models (scope, version);

-- Which version serves each scope (a rollback moves the pointer back).
CREATE TABLE IF NOT EXISTS router_active (
    scope text PRIMARY KEY,
    version bigint NOT NULL REFERENCES router_models (version),
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- One row per search (unless the deployment opted out: ROUTER_TELEMETRY), kept
-- ROUTER_TELEMETRY_DAYS days.
CREATE TABLE IF NOT EXISTS search_telemetry (
    search_id uuid PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    scope_hash text NOT NULL,
    entity_ids text[] NOT NULL,
    query text NOT NULL,
    features jsonb,
    requested text NOT NULL,          -- the strategy the request named ('' for none)
    strategy text NOT NULL,           -- served: text | vector | hybrid
    alpha float8 NOT NULL,
    shadow_strategy text,             -- what the router chose while the default served (shadow mode)
    shadow_alpha float8,
    model_version bigint,
    results jsonb NOT NULL,           -- [{chunk_id, document_id, entity_id, score, scores}]
    cache text NOT NULL,
    timings jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS search_telemetry_created ON search_telemetry (created_at);

-- POST /feedback: which returned chunks were useful, and what each bin would have earned.
CREATE TABLE IF NOT EXISTS router_feedback (
    id bigserial PRIMARY KEY,
    search_id uuid NOT NULL REFERENCES search_telemetry (search_id) ON DELETE CASCADE,
    scope text NOT NULL,
    useful text[] NOT NULL,
    not_useful text[] NOT NULL,
    rewards jsonb NOT NULL,           -- {bin name: reward}
    applied_in bigint REFERENCES router_models (version),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS router_feedback_pending ON router_feedback (scope, id) WHERE applied_in IS NULL;
