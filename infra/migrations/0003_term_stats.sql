-- edgeindex schema, version 3: term statistics per entity, kept by the database itself.
--
-- Full-text ranking weighs each query term by its inverse document frequency (BM25's IDF)
-- instead of ts_rank's "every word alike", and fuzzy matching corrects a misspelled query
-- word against the entity's own vocabulary (pg_trgm over short terms, not over whole
-- chunks). Both read these tables. Triggers on `chunks` keep them exact in the same
-- transaction as the chunk change, whoever writes: ingestion, document deletion (FK
-- cascade), the bulk loader's COPY.

-- How many chunks of an entity hold each lexeme (as to_tsvector('english') produced it).
CREATE TABLE term_stats (
    entity_id text    NOT NULL,
    term      text    NOT NULL,
    df        integer NOT NULL,
    PRIMARY KEY (entity_id, term)
) PARTITION BY HASH (entity_id);

CREATE TABLE term_stats_p0 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 0);
CREATE TABLE term_stats_p1 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 1);
CREATE TABLE term_stats_p2 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 2);
CREATE TABLE term_stats_p3 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 3);
CREATE TABLE term_stats_p4 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 4);
CREATE TABLE term_stats_p5 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 5);
CREATE TABLE term_stats_p6 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 6);
CREATE TABLE term_stats_p7 PARTITION OF term_stats FOR VALUES WITH (MODULUS 8, REMAINDER 7);

-- "Did you mean": vocabulary terms similar to a query word that the entity does not have.
CREATE INDEX term_stats_trgm_idx ON term_stats USING gin (term gin_trgm_ops);

-- Chunk count and total lexeme count per entity: N of the IDF, the average chunk length.
CREATE TABLE entity_stats (
    entity_id text   PRIMARY KEY,
    chunks    bigint NOT NULL,
    lexemes   bigint NOT NULL
);

-- A tsquery matching exactly this lexeme (no parsing, no stemming: it is one already).
CREATE FUNCTION lexeme_query(term text) RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('''' || replace(replace(term, '\', '\\'), '''', '''''') || '''')::tsquery
$$;

-- OR of tsqueries.
CREATE AGGREGATE tsquery_or_all(tsquery) (SFUNC = tsquery_or, STYPE = tsquery, PARALLEL = SAFE);

-- Per (entity, term): how many of the given chunk tsvectors hold it, each counted with its
-- sign (+1 added, -1 removed); terms whose count does not change are left out.
CREATE FUNCTION term_deltas(p_entity_ids text[], p_vectors tsvector[], p_signs integer[])
RETURNS TABLE (entity_id text, term text, delta integer) LANGUAGE sql IMMUTABLE AS $$
    SELECT r.entity_id, t.term, sum(r.sign)::integer
    FROM unnest(p_entity_ids, p_vectors, p_signs) AS r (entity_id, tsv, sign),
         unnest(tsvector_to_array(r.tsv)) AS t (term)
    GROUP BY r.entity_id, t.term
    HAVING sum(r.sign) <> 0
$$;

-- Apply +1 (sign 1) or -1 (sign -1) per chunk tsvector to both tables.
CREATE FUNCTION apply_term_stats(p_entity_ids text[], p_vectors tsvector[], p_signs integer[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_entity_ids), 0) = 0 THEN
        RETURN;
    END IF;
    -- One writer per entity at a time, until its transaction ends. Without this, two
    -- ingestions of one entity would lock common terms in different orders and deadlock;
    -- with it they queue here (entities locked in sorted order).
    PERFORM pg_advisory_xact_lock(hashtextextended('edgeindex.term_stats:' || e, 0))
    FROM (SELECT DISTINCT e FROM unnest(p_entity_ids) AS e ORDER BY e) AS sorted;

    INSERT INTO term_stats AS s (entity_id, term, df)
    SELECT d.entity_id, d.term, d.delta FROM term_deltas(p_entity_ids, p_vectors, p_signs) AS d
    ORDER BY d.entity_id, d.term
    ON CONFLICT (entity_id, term) DO UPDATE SET df = s.df + EXCLUDED.df;
    IF -1 = ANY (p_signs) THEN
        -- a term no chunk holds any more leaves the vocabulary
        DELETE FROM term_stats s
        USING term_deltas(p_entity_ids, p_vectors, p_signs) AS d
        WHERE d.delta < 0 AND s.entity_id = d.entity_id AND s.term = d.term AND s.df <= 0;
    END IF;

    INSERT INTO entity_stats AS s (entity_id, chunks, lexemes)
    SELECT r.entity_id, sum(r.sign), sum(r.sign * length(r.tsv))
    FROM unnest(p_entity_ids, p_vectors, p_signs) AS r (entity_id, tsv, sign)
    GROUP BY r.entity_id
    ORDER BY r.entity_id
    ON CONFLICT (entity_id) DO UPDATE
    SET chunks = s.chunks + EXCLUDED.chunks, lexemes = s.lexemes + EXCLUDED.lexemes;
END $$;

CREATE FUNCTION chunks_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM apply_term_stats(array_agg(n.entity_id), array_agg(n.tsv), array_agg(1)) FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM apply_term_stats(array_agg(o.entity_id), array_agg(o.tsv), array_agg(-1)) FROM old_rows o;
    ELSE
        -- only rows whose text changed (a reused chunk that moved keeps its terms)
        PERFORM apply_term_stats(array_agg(x.entity_id), array_agg(x.tsv), array_agg(x.sign))
        FROM (SELECT n.entity_id, n.tsv, 1 AS sign
              FROM new_rows n JOIN old_rows o ON o.entity_id = n.entity_id AND o.id = n.id
              WHERE n.tsv IS DISTINCT FROM o.tsv
              UNION ALL
              SELECT o.entity_id, o.tsv, -1
              FROM new_rows n JOIN old_rows o ON o.entity_id = n.entity_id AND o.id = n.id
              WHERE n.tsv IS DISTINCT FROM o.tsv) AS x;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_term_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_term_stats();
CREATE TRIGGER chunks_term_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_term_stats();
CREATE TRIGGER chunks_term_stats_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_term_stats();

-- Chunks stored before this migration.
SELECT apply_term_stats(array_agg(entity_id), array_agg(tsv), array_agg(1)) FROM chunks;
