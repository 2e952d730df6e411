-- edgeindex schema, version 5: tool registry and index selection for agents.
--
-- Tools and index descriptors are small catalogues scored whole in the search worker's
-- memory for every request; Postgres is their source of truth. `catalog_versions` is
-- bumped by every change, so a worker re-reads a catalogue only when it moved.

CREATE TABLE tools (
    entity_id     text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    description   text NOT NULL DEFAULT '',
    parameters    jsonb NOT NULL DEFAULT '{"type": "object", "properties": {}}',
    category      text,
    tags          text[] NOT NULL DEFAULT '{}',
    requires      text[] NOT NULL DEFAULT '{}',
    examples      text[] NOT NULL DEFAULT '{}',
    content_hash  text NOT NULL,            -- sha256 of the embedded text: unchanged -> not re-embedded
    definition_hash text NOT NULL,          -- sha256 of the whole definition (what was registered)
    tokens        integer NOT NULL,         -- cl100k_base tokens of the definition as handed to an LLM
    model_id      text NOT NULL,
    embedding     vector({{dimension}}) NOT NULL,
    -- a second view: the description alone (NULL when empty). A request is as close to a tool
    -- as to its closest view; on the dev catalogue the description alone ranks better than
    -- name + description + parameters, and the best of both better than either.
    description_embedding vector({{dimension}}),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, name)
);

-- Example requests of a tool, each embedded: given at registration, or learned from feedback
-- (bounded per tool by the code that inserts them).
CREATE TABLE tool_examples (
    entity_id   text NOT NULL,
    name        text NOT NULL,
    text_hash   text NOT NULL,
    text        text NOT NULL,
    source      text NOT NULL CHECK (source IN ('definition', 'feedback')),
    model_id    text NOT NULL,
    embedding   vector({{dimension}}) NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, name, text_hash),
    FOREIGN KEY (entity_id, name) REFERENCES tools (entity_id, name) ON DELETE CASCADE
);

-- Bounded prior learned from feedback: used / shown counts smoothed into a small bonus.
CREATE TABLE tool_feedback (
    entity_id  text NOT NULL,
    name       text NOT NULL,
    used       integer NOT NULL DEFAULT 0,
    shown      integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, name),
    FOREIGN KEY (entity_id, name) REFERENCES tools (entity_id, name) ON DELETE CASCADE
);

-- Indices an agent may search: a collection of the tenant's own documents (profile kept
-- by ingestion) or an external index registered as a descriptor alone.
CREATE TABLE index_descriptors (
    entity_id    text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    kind         text NOT NULL CHECK (kind IN ('collection', 'external')),
    description  text NOT NULL DEFAULT '',
    fields       text[] NOT NULL DEFAULT '{}',
    profile      jsonb NOT NULL DEFAULT '{}',
    content_hash text NOT NULL,
    model_id     text NOT NULL,
    embedding    vector({{dimension}}) NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, name)
);

-- Parts of a descriptor whose fields are qualified ("table.column"): each part (a table of a
-- database) is embedded and scored on its own, and the descriptor scores by its best part too.
CREATE TABLE index_parts (
    entity_id   text NOT NULL,
    index_name  text NOT NULL,
    part        text NOT NULL,
    fields      text[] NOT NULL DEFAULT '{}',
    model_id    text NOT NULL,
    embedding   vector({{dimension}}) NOT NULL,
    PRIMARY KEY (entity_id, index_name, part),
    FOREIGN KEY (entity_id, index_name) REFERENCES index_descriptors (entity_id, name) ON DELETE CASCADE
);

ALTER TABLE documents ADD COLUMN collection text;
CREATE INDEX documents_collection ON documents (entity_id, collection) WHERE collection IS NOT NULL;

CREATE TABLE catalog_versions (
    entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    kind      text NOT NULL CHECK (kind IN ('tools', 'indices')),
    version   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (entity_id, kind)
);
