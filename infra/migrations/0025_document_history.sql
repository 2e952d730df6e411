-- Document history (shared/history/): the versions a document had, and the text of the chunks
-- those versions held that the live version no longer does.
--
-- A version's chunks are its list of chunk ids in position order (`chunk_ids`): a chunk row
-- never changes its text (ids of new chunks are derived from the version that wrote them), so
-- the list and the rows it names are the version exactly. Chunks the live version keeps stay in
-- `chunks`; a chunk the live version drops moves to `chunk_archive` in the upsert's transaction,
-- while some retained version still names it. Neither table takes part in live search, the
-- term statistics or the HNSW index: history costs a live search nothing.
--
-- Retention is per entity (`entities.history_versions`, `history_days`; NULL: the deployment's
-- HISTORY_VERSIONS and HISTORY_DAYS). Deleting a document deletes its history (ON DELETE CASCADE).

ALTER TABLE entities ADD COLUMN IF NOT EXISTS history_versions integer CHECK (history_versions >= 0);
ALTER TABLE entities ADD COLUMN IF NOT EXISTS history_days integer CHECK (history_days >= 0);

-- The highest version of a document whose history retention dropped: `changes` since then is
-- gone (410), since before the document's first version is everything added.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS history_pruned_to integer;

CREATE TABLE document_versions (
    entity_id   text NOT NULL,
    document_id text NOT NULL,
    version     integer NOT NULL,
    live_from   timestamptz NOT NULL,          -- the commit that made it the document's live version
    live_to     timestamptz,                   -- the commit that replaced it; NULL while live
    chunk_ids   uuid[] NOT NULL,               -- its chunks, in position order
    starts      integer[] NOT NULL,            -- their character spans in that version's text
    ends        integer[] NOT NULL,
    PRIMARY KEY (entity_id, document_id, version),
    FOREIGN KEY (entity_id, document_id) REFERENCES documents (entity_id, id) ON DELETE CASCADE
);
CREATE INDEX document_versions_time_idx ON document_versions (entity_id, live_from);

CREATE TABLE chunk_archive (
    entity_id    text NOT NULL,
    document_id  text NOT NULL,
    id           uuid NOT NULL,
    content      text NOT NULL,
    content_hash text NOT NULL,
    token_count  integer NOT NULL,
    model_id     text NOT NULL,
    embedding    vector({{dimension}}) NOT NULL,
    text_config  regconfig NOT NULL,
    segmented    text,
    tsv          tsvector NOT NULL,             -- the chunk's full-text vector as it was indexed
    archived_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, id),
    FOREIGN KEY (entity_id, document_id) REFERENCES documents (entity_id, id) ON DELETE CASCADE
);
CREATE INDEX chunk_archive_document_idx ON chunk_archive (entity_id, document_id);

-- Every live version so far starts its history now: its chunks as they stand.
INSERT INTO document_versions (entity_id, document_id, version, live_from, chunk_ids, starts, ends)
SELECT d.entity_id, d.id, d.ready_version, d.updated_at,
       coalesce(l.ids, '{}'), coalesce(l.starts, '{}'), coalesce(l.ends, '{}')
FROM documents d
LEFT JOIN LATERAL (SELECT array_agg(c.id ORDER BY c.position) AS ids,
                          array_agg(c.start_char ORDER BY c.position) AS starts,
                          array_agg(c.end_char ORDER BY c.position) AS ends
                   FROM chunks c WHERE c.entity_id = d.entity_id AND c.document_id = d.id) l ON true
WHERE d.ready_version IS NOT NULL;
