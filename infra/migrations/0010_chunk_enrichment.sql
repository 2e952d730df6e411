-- edgeindex schema, version 10: chunk enrichment (shared/enhance/enrich.py).
--
-- With an LLM configured and the ingest worker's ENRICH_CHUNKS var set, ingestion asks it
-- for keywords and questions per new chunk and stores them beside the chunk. They join the
-- chunk's tsvector at weight C (the chunk's own words keep the default D), so the one GIN
-- index and the term statistics cover them, and BM25 counts an occurrence of weight C at a
-- lower weight (ts_rank_cd's weight array in shared/sql/search.sql): words the chunk only
-- was said to be about never outrank the chunk that says them. NULL (every chunk stored
-- before, and every chunk without an LLM) adds nothing: a || to_tsvector('') is a.
-- SET EXPRESSION rewrites the chunks table once (and its indexes); no trigger fires and no
-- tsvector changes.

ALTER TABLE chunks ADD COLUMN enrichment text;
ALTER TABLE chunks ALTER COLUMN tsv SET EXPRESSION AS (
    to_tsvector(text_config, coalesce(segmented, content))
    || setweight(to_tsvector(text_config, coalesce(enrichment, '')), 'C'));
