"""Search defaults and tuning constants, in one place so an evaluation can sweep them.

Request fields override the per-request ones (k, alpha, fusion, thresholds);
the rest shape how many candidates each retriever brings to fusion.
"""

from __future__ import annotations

# Per-request defaults ------------------------------------------------------------
K = 10
ALPHA = 0.8                 # 1 = vector only, 0 = full text (+ typo stand-ins) only; best NDCG@10 of the sweep
                            # on both evaluation datasets (edgeindex eval --sweep alpha=...)
FUSION = "linear"           # "linear" (normalized blend) or "rrf"
VECTOR_THRESHOLD = 0.0      # cosine similarity a chunk needs for its vector score to count
TEXT_THRESHOLD = 0.0        # lexical score (text + trigram: BM25 as a share of the query's best) a chunk needs
TRIGRAM_THRESHOLD = 0.4     # pg_trgm similarity a vocabulary term needs to stand in for an unknown query word
                            # (0.4: "fahrenhiet" → fahrenheit at 0.47, "selenum" → select at 0.36 is out)
TEXT_MODE = "any"           # "any": chunks with any query word, ranked by BM25; "websearch": all words,
                            # "phrases", -not, or

# Retrieval shape -------------------------------------------------------------------
CANDIDATE_FACTOR = 4        # each retriever keeps k * factor candidates for fusion ...
DEDUPE_CANDIDATE_FACTOR = 8  # ... more when results are deduplicated per document
MIN_CANDIDATES = 40         # ... but at least this many (HNSW's default ef_search)
MAX_CANDIDATES = 1000
HNSW_EF_SEARCH = 40         # hnsw.ef_search on search connections (pgvector's default). The graph walk is about
                            # half an uncached search's Postgres execution: 40 costs ~1.1 ms less backend CPU per
                            # search than 100 (7.5 -> 6.4 ms at 12k chunks). On MS MARCO's real vectors at
                            # k 10 it finds 99.8% of the exact vector top 10 (100: all), with NDCG@10 and recall
                            # unchanged. A search asking more
                            # candidates than this walks on (hnsw.iterative_scan, bindings/database.py).
EXACT_MAX_DOCUMENTS = 500   # vector search is exact (no HNSW) when the documents in scope ...
EXACT_MAX_CHUNKS = 2000     # ... are at most this many and hold at most this many chunks;
EXACT_SELECTIVE_MAX_CHUNKS = 25_000  # and a scope of entities without document filters is exact up to this
EXACT_MAX_SHARE = 0.05      # many chunks when it is at most this share of the partitions it spans
                            # (docs/scale.md: the HNSW walk of such a scope is ~10x the exact scan)
RRF_K = 60                  # the usual reciprocal-rank-fusion constant
TEXT_MAX_MATCHES = 300      # chunks BM25 scores per candidate set (rarest terms' matches, all-words matches):
                            # 300 ranks as 1000 did on both evaluation datasets, SQL p50 -1 ms; 150 does not
BM25_K1 = 1.2               # BM25 term-frequency saturation ...
BM25_B = 0.75               # ... and length normalization (the usual values)
ENRICHMENT_WEIGHT = 0.5     # an occurrence in a chunk's LLM enrichment (tsvector weight C) counts this much of
                            # one in its text (shared/ingest/enrich.py)
FUZZY_MIN_CHARS = 4         # unknown query words shorter than this get no stand-ins ...
FUZZY_MAX_WORDS = 5         # ... at most this many words per query get them (longest first) ...
FUZZY_TERMS = 3             # ... each at most this many vocabulary terms ...
FUZZY_SIMILARITY_FLOOR = 0.3  # ... that the trigram index returns (pg_trgm.similarity_threshold): the
                              # lowest trigram_threshold that still has an effect
MAX_NEIGHBOURS = 3
RERANK_CANDIDATES = 50      # rows handed to the reranker (at least k)
