-- edgeindex schema, version 6: full text in the language of each chunk.
--
-- Before this migration every chunk was indexed with to_tsvector('english'): German words were
-- stemmed as if English (so "Häuser" never met "Haus"), and Chinese, Japanese or Thai
-- text, written without spaces, became one "word" per sentence, which no query matches.
-- Ingestion now detects each chunk's language (shared/ingest/language.py) and stores:
--   language     the detected ISO 639 code (the default, English, when the chunk and its
--                document are too short or too mixed to tell);
--   text_config  the Postgres text-search configuration for it: a Snowball stemmer for
--                the ~30 languages Postgres has one for, `simple` (lower-casing only)
--                for any other;
--   segmented    for text with runs of a script written without spaces (Han, kana, Thai,
--                ...): the same text with those runs cut into words (Chinese by jieba's
--                dictionary, the others into character bigrams), so the parser sees
--                words. NULL when nothing needed cutting, which is every text in a
--                space-separated script. Queries are cut by the same function before
--                Postgres parses them.
-- The tsvector is built from them, still by Postgres itself (a generated column), so
-- every writer (ingestion, the bulk loader's COPY) gets the same lexemes.
--
-- Rows stored before (and rows the bulk loader writes) keep language NULL and text_config 'english', the configuration
-- that built their tsvector: nothing changes for them until their document is
-- ingested again. SET EXPRESSION rewrites the chunks table once (and its indexes).

ALTER TABLE chunks ADD COLUMN language text;
ALTER TABLE chunks ADD COLUMN text_config regconfig NOT NULL DEFAULT 'english';
ALTER TABLE chunks ADD COLUMN segmented text;
ALTER TABLE chunks ALTER COLUMN tsv SET EXPRESSION AS (to_tsvector(text_config, coalesce(segmented, content)));

-- Term statistics per text-search configuration. A lexeme means something only within
-- the configuration that made it ('art' stemmed as English and as German are different
-- words), and BM25's idf is the rarity of a word among the chunks of its own language:
-- document frequencies, chunk counts and average lengths are kept per (entity, config).
-- The search statement parses the query once with each configuration present in the
-- scope and scores a chunk only with the query terms of its own configuration; typo
-- stand-ins come from the vocabulary of the configuration the unknown word was parsed
-- with (shared/sql/search.sql, `lexical`).
ALTER TABLE term_stats ADD COLUMN config regconfig NOT NULL DEFAULT 'english';
ALTER TABLE term_stats DROP CONSTRAINT term_stats_pkey;
ALTER TABLE term_stats ADD PRIMARY KEY (entity_id, config, term);
ALTER TABLE term_stats ALTER COLUMN config DROP DEFAULT;

ALTER TABLE entity_stats ADD COLUMN config regconfig NOT NULL DEFAULT 'english';
ALTER TABLE entity_stats DROP CONSTRAINT entity_stats_pkey;
ALTER TABLE entity_stats ADD PRIMARY KEY (entity_id, config);
ALTER TABLE entity_stats ALTER COLUMN config DROP DEFAULT;

-- The triggers of 0003, with the configuration carried along. Still exact in the same
-- transaction as the chunk change, still one writer per entity at a time.
DROP FUNCTION apply_term_stats(text[], tsvector[], integer[]);
DROP FUNCTION term_deltas(text[], tsvector[], integer[]);

-- Per (entity, config, term): how many of the given chunk tsvectors hold it, each counted
-- with its sign (+1 added, -1 removed); terms whose count does not change are left out.
CREATE FUNCTION term_deltas(p_entity_ids text[], p_configs regconfig[], p_vectors tsvector[], p_signs integer[])
RETURNS TABLE (entity_id text, config regconfig, term text, delta integer) LANGUAGE sql IMMUTABLE AS $$
    SELECT r.entity_id, r.config, t.term, sum(r.sign)::integer
    FROM unnest(p_entity_ids, p_configs, p_vectors, p_signs) AS r (entity_id, config, tsv, sign),
         unnest(tsvector_to_array(r.tsv)) AS t (term)
    GROUP BY r.entity_id, r.config, t.term
    HAVING sum(r.sign) <> 0
$$;

-- Apply +1 (sign 1) or -1 (sign -1) per chunk tsvector to both tables.
CREATE FUNCTION apply_term_stats(p_entity_ids text[], p_configs regconfig[], p_vectors tsvector[],
                                 p_signs integer[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_entity_ids), 0) = 0 THEN
        RETURN;
    END IF;
    -- One writer per entity at a time (see 0003): entities locked in sorted order.
    PERFORM pg_advisory_xact_lock(hashtextextended('edgeindex.term_stats:' || e, 0))
    FROM (SELECT DISTINCT e FROM unnest(p_entity_ids) AS e ORDER BY e) AS sorted;

    INSERT INTO term_stats AS s (entity_id, config, term, df)
    SELECT d.entity_id, d.config, d.term, d.delta FROM term_deltas(p_entity_ids, p_configs, p_vectors, p_signs) AS d
    ORDER BY d.entity_id, d.config, d.term
    ON CONFLICT (entity_id, config, term) DO UPDATE SET df = s.df + EXCLUDED.df;
    IF -1 = ANY (p_signs) THEN
        -- a term no chunk holds any more leaves the vocabulary
        DELETE FROM term_stats s
        USING term_deltas(p_entity_ids, p_configs, p_vectors, p_signs) AS d
        WHERE d.delta < 0 AND s.entity_id = d.entity_id AND s.config = d.config AND s.term = d.term
          AND s.df <= 0;
    END IF;

    -- rows reaching zero chunks stay (an upsert target); readers skip them
    INSERT INTO entity_stats AS s (entity_id, config, chunks, lexemes)
    SELECT r.entity_id, r.config, sum(r.sign), sum(r.sign * length(r.tsv))
    FROM unnest(p_entity_ids, p_configs, p_vectors, p_signs) AS r (entity_id, config, tsv, sign)
    GROUP BY r.entity_id, r.config
    ORDER BY r.entity_id, r.config
    ON CONFLICT (entity_id, config) DO UPDATE
    SET chunks = s.chunks + EXCLUDED.chunks, lexemes = s.lexemes + EXCLUDED.lexemes;
END $$;

CREATE OR REPLACE FUNCTION chunks_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM apply_term_stats(array_agg(n.entity_id), array_agg(n.text_config), array_agg(n.tsv), array_agg(1))
        FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM apply_term_stats(array_agg(o.entity_id), array_agg(o.text_config), array_agg(o.tsv), array_agg(-1))
        FROM old_rows o;
    ELSE
        -- only rows whose lexemes or configuration changed (a reused chunk that moved keeps its terms)
        PERFORM apply_term_stats(array_agg(x.entity_id), array_agg(x.config), array_agg(x.tsv), array_agg(x.sign))
        FROM (SELECT n.entity_id, n.text_config AS config, n.tsv, 1 AS sign
              FROM new_rows n JOIN old_rows o ON o.entity_id = n.entity_id AND o.id = n.id
              WHERE (n.tsv, n.text_config) IS DISTINCT FROM (o.tsv, o.text_config)
              UNION ALL
              SELECT o.entity_id, o.text_config, o.tsv, -1
              FROM new_rows n JOIN old_rows o ON o.entity_id = n.entity_id AND o.id = n.id
              WHERE (n.tsv, n.text_config) IS DISTINCT FROM (o.tsv, o.text_config)) AS x;
    END IF;
    RETURN NULL;
END $$;
