-- edgeindex schema, version 8: collections, the indices made of a tenant's own documents.
--
-- A document names its collection at upload (documents.collection, added by 0005). A
-- collection's descriptor for index selection is a row of `index_descriptors` with kind
-- 'collection', whose profile (JSON field names, tags, sources, distinctive terms, a summary
-- of its documents' summaries) the ingest worker recomputes after its documents change
-- (shared/selection/collections.py). What changed is recorded here by a trigger, in the
-- same transaction as the change, whoever makes it (ingestion marking a version ready, the
-- upload worker deleting a document, a new upload moving a document to another collection),
-- so no change is missed and the recomputation is debounced: many documents becoming ready
-- together cost one recomputation of their collection.

-- What a tenant says about a collection (its description), kept apart from the derived
-- descriptor so that a recomputation never loses what a person wrote.
CREATE TABLE collections (
    entity_id   text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$'),
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, name)
);

-- Collections whose profile is due for recomputation. `first_changed_at` bounds the debounce:
-- a collection that keeps changing is still recomputed at least every few seconds.
CREATE TABLE collection_changes (
    entity_id        text NOT NULL,
    name             text NOT NULL,
    changed_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    first_changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (entity_id, name)
);
CREATE INDEX collection_changes_due ON collection_changes (changed_at);

ALTER TABLE documents ADD CONSTRAINT documents_collection_check
    CHECK (collection IS NULL OR collection ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$');

CREATE FUNCTION collection_changed(p_entity_id text, p_name text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO collection_changes AS c (entity_id, name) VALUES (p_entity_id, p_name)
    ON CONFLICT (entity_id, name) DO UPDATE SET changed_at = clock_timestamp();
$$;

-- Only what a profile is made of counts: a version becoming ready (or failing, which leaves
-- the live one), a document leaving or joining a collection, its descriptive fields.
CREATE FUNCTION documents_collection_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.collection IS NOT NULL AND (
           TG_OP = 'DELETE' OR NEW.collection IS DISTINCT FROM OLD.collection
           OR NEW.ready_version IS DISTINCT FROM OLD.ready_version OR NEW.summary IS DISTINCT FROM OLD.summary
           OR NEW.tags IS DISTINCT FROM OLD.tags OR NEW.source IS DISTINCT FROM OLD.source
           OR NEW.title IS DISTINCT FROM OLD.title) THEN
        PERFORM collection_changed(OLD.entity_id, OLD.collection);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.collection IS NOT NULL THEN
        INSERT INTO collections (entity_id, name) VALUES (NEW.entity_id, NEW.collection)
        ON CONFLICT DO NOTHING;
        IF TG_OP = 'INSERT' OR NEW.collection IS DISTINCT FROM OLD.collection THEN
            PERFORM collection_changed(NEW.entity_id, NEW.collection);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER documents_collection AFTER INSERT OR UPDATE OR DELETE ON documents
    FOR EACH ROW EXECUTE FUNCTION documents_collection_trigger();
