-- Vectors of embedding models other than the serving one (shared/models/, `edgeindex models`).
--
-- The serving model's vectors stay in `chunks.embedding`, where the partitioned half-precision HNSW
-- indexes are. A second model's vectors are written here beside them, each with its model id and
-- dimension (`embedding` has no fixed dimension), by a backfill that reuses the stored chunks: no
-- re-chunking, no re-extraction. A chunk that is deleted or replaced takes its vectors with it.
CREATE TABLE chunk_vectors (
    model_id   text NOT NULL,
    entity_id  text NOT NULL,
    chunk_id   uuid NOT NULL,
    content_hash text NOT NULL,             -- of the text embedded: a chunk rewritten since is pending again
    dimension  integer NOT NULL CHECK (dimension > 0),
    embedding  vector NOT NULL CHECK (vector_dims(embedding) = dimension),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, entity_id, chunk_id),
    FOREIGN KEY (entity_id, chunk_id) REFERENCES chunks (entity_id, id) ON DELETE CASCADE
);
-- the foreign key's reverse lookup: deleting a chunk finds its vectors without a scan
CREATE INDEX chunk_vectors_chunk_idx ON chunk_vectors (entity_id, chunk_id);

-- One row per model a backfill was started for: what it covers and how far it got.
CREATE TABLE model_backfills (
    model_id    text PRIMARY KEY,
    dimension   integer NOT NULL CHECK (dimension > 0),
    entity_ids  text[],                       -- NULL: every entity
    state       text NOT NULL CHECK (state IN ('running', 'stopped', 'done')),
    embedded    bigint NOT NULL DEFAULT 0,    -- chunks this model's backfills embedded so far
    seconds     double precision NOT NULL DEFAULT 0,  -- time spent embedding and writing them
    started_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
