-- Entities served by another embedding model than the deployment's (`edgeindex models cutover --entity`).
--
-- `embedding_model` names the deployment's model; a row here names the one an entity's chunks are
-- served with instead (same dimension: the chunks' HNSW indexes are of one). An entity without a row
-- is served by the deployment's model. A deployment-wide cutover moves every entity and clears the rows.
CREATE TABLE entity_models (
    entity_id  text PRIMARY KEY REFERENCES entities (id) ON DELETE CASCADE,
    model_id   text NOT NULL,
    dimension  integer NOT NULL CHECK (dimension > 0),
    since      timestamptz NOT NULL DEFAULT now()
);

-- The entities a cutover or a job moved; NULL: every entity (the deployment's model changed).
ALTER TABLE model_cutovers ADD COLUMN entity_ids text[];
ALTER TABLE model_jobs ADD COLUMN entity_ids text[];
