"""Search defaults and tuning constants, in one place so an evaluation can sweep them.

Request fields override the per-request ones (k, alpha, fusion, thresholds);
the rest shape how many candidates each retriever brings to fusion.
"""

from __future__ import annotations

# Per-request defaults ------------------------------------------------------------
K = 10
ALPHA = 0.8                 # 1 = vector only, 0 = full text (+ trigram) only; best NDCG@10 of the sweep
                            # on both evaluation datasets (results/README.md)
FUSION = "linear"           # "linear" (normalized blend) or "rrf"
VECTOR_THRESHOLD = 0.0      # cosine similarity a chunk needs for its vector score to count
TEXT_THRESHOLD = 0.0        # ts_rank / (1 + ts_rank) a chunk needs for its text score to count
TRIGRAM_THRESHOLD = 0.0     # pg_trgm word_similarity, on top of the index operator's own 0.6
TEXT_MODE = "any"           # "any": chunks with any query term, ranked by ts_rank; "websearch": all terms, "phrases", -not, or

# Retrieval shape -------------------------------------------------------------------
CANDIDATE_FACTOR = 4        # each retriever keeps k * factor candidates for fusion ...
DEDUPE_CANDIDATE_FACTOR = 8  # ... more when results are deduplicated per document
MIN_CANDIDATES = 40         # ... but at least this many (HNSW's default ef_search)
MAX_CANDIDATES = 1000
HNSW_EF_SEARCH = 100        # hnsw.ef_search on search connections; MS MARCO sample, real vectors: 40 (the
                            # default) finds 98% of the exact top 10, 100 finds all of it, for +0.5 ms
EXACT_MAX_DOCUMENTS = 500   # vector search is exact (no HNSW) when the documents in scope ...
EXACT_MAX_CHUNKS = 2000     # ... are at most this many and hold at most this many chunks
RRF_K = 60                  # the usual reciprocal-rank-fusion constant
TEXT_MAX_MATCHES = 1000     # "any word" matches ranked when fewer than k chunks hold every word
TRIGRAM_WEIGHT = 0.3        # share of trigram in the lexical score (the rest is full text)
TRIGRAM_MAX_QUERY_CHARS = 64  # fuzzy matching is for short queries (typos, identifiers) ...
TRIGRAM_MAX_CANDIDATES = 200  # ... and scores at most this many trigram-index matches,
TRIGRAM_SCAN_MAX_CHUNKS = 300  # ... or compares every chunk in scope when there are at most this many
RANK_NORMALIZATION = 0      # ts_rank flag; 0 (no length normalization) ranked best on the MS MARCO sample
MAX_NEIGHBOURS = 3
RERANK_CANDIDATES = 50      # rows handed to the reranker (at least k)
