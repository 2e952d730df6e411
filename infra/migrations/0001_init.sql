-- edgeindex schema, version 1.
-- {{dimension}} is the embedding dimension of the configured model; the
-- migration runner fills it in the first time and refuses a different one later.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Which model the stored vectors came from. One row; vectors are never mixed.
CREATE TABLE embedding_model (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model_id   text    NOT NULL,
    dimension  integer NOT NULL CHECK (dimension > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Tenancy ------------------------------------------------------------------

CREATE TABLE entities (
    id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'),
    kind       text NOT NULL CHECK (kind IN ('user', 'group', 'network', 'community')),
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    key_hash   text NOT NULL UNIQUE,          -- sha256 of the secret; the secret is never stored
    name       text NOT NULL DEFAULT '',
    is_admin   boolean NOT NULL DEFAULT false,
    entity_ids text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

-- Documents and chunks -------------------------------------------------------

CREATE TABLE documents (
    entity_id       text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    id              text NOT NULL CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'),
    version         integer NOT NULL DEFAULT 1,        -- bumped by every upload request
    ready_version   integer,                            -- version whose chunks are live
    title           text NOT NULL DEFAULT '',
    source          text NOT NULL DEFAULT 'upload',
    content_type    text NOT NULL,
    tags            text[] NOT NULL DEFAULT '{}',
    metadata        jsonb NOT NULL DEFAULT '{}',
    object_key      text NOT NULL,
    size_bytes      bigint,
    content_hash    text,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
    step            text,
    error           text,
    summary         text NOT NULL DEFAULT '',
    chunk_count     integer NOT NULL DEFAULT 0,
    chunks_embedded integer NOT NULL DEFAULT 0,
    chunks_reused   integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id)
);
CREATE INDEX documents_source_idx ON documents (entity_id, source);
CREATE INDEX documents_tags_idx ON documents USING gin (tags);
CREATE INDEX documents_time_idx ON documents (entity_id, updated_at);

-- Chunks are hash-partitioned by entity, so a search over a few entities touches
-- few partitions and each partition keeps its own HNSW/GIN/trigram indexes.
CREATE TABLE chunks (
    entity_id    text NOT NULL,
    id           uuid NOT NULL DEFAULT gen_random_uuid(),
    document_id  text NOT NULL,
    version      integer NOT NULL,          -- document version that last wrote this row
    position     integer NOT NULL,          -- ordinal within the document
    start_char   integer NOT NULL,
    end_char     integer NOT NULL,
    content      text NOT NULL,
    content_hash text NOT NULL,             -- sha256 of content: the hash-diff key
    token_count  integer NOT NULL,
    model_id     text NOT NULL,
    embedding    vector({{dimension}}) NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, document_id) REFERENCES documents (entity_id, id) ON DELETE CASCADE
) PARTITION BY HASH (entity_id);

CREATE TABLE chunks_p0 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 0);
CREATE TABLE chunks_p1 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 1);
CREATE TABLE chunks_p2 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 2);
CREATE TABLE chunks_p3 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 3);
CREATE TABLE chunks_p4 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 4);
CREATE TABLE chunks_p5 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 5);
CREATE TABLE chunks_p6 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 6);
CREATE TABLE chunks_p7 PARTITION OF chunks FOR VALUES WITH (MODULUS 8, REMAINDER 7);

CREATE INDEX chunks_document_idx ON chunks (entity_id, document_id, position);
CREATE INDEX chunks_hash_idx ON chunks (entity_id, document_id, content_hash);
CREATE INDEX chunks_embedding_idx ON chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
CREATE INDEX chunks_trgm_idx ON chunks USING gin (content gin_trgm_ops);

-- Durable workflows ------------------------------------------------------------

CREATE TABLE workflow_runs (
    id          text PRIMARY KEY,
    workflow    text NOT NULL,
    params      jsonb NOT NULL,
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'complete', 'errored')),
    current_step text,
    error       text,
    attempts    integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workflow_steps (
    run_id       text NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    name         text NOT NULL,
    seq          integer NOT NULL,
    output       jsonb,
    attempts     integer NOT NULL DEFAULT 1,
    completed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, name)
);

-- Semantic query cache (the Vectorize-like binding) ----------------------------

CREATE TABLE vector_index (
    index_name text NOT NULL,
    namespace  text NOT NULL,
    id         text NOT NULL,
    model_id   text NOT NULL,
    embedding  vector({{dimension}}) NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (index_name, id)
);
CREATE INDEX vector_index_namespace_idx ON vector_index (index_name, namespace);
