"""Tuning of query enhancement, in one place so an evaluation (``edgeindex eval``) can sweep it."""

from __future__ import annotations

# What `enhance: "auto"` (the default) applies when no LLM is configured, and with one.
# Chosen from `edgeindex eval`: an enhancement is on by default
# only where the evaluation shows it helps. PRF: hybrid gained on business-reports (+0.005
# NDCG@10) and xquad-de (+0.006) but lost on xquad-zh (-0.004); full text gained on
# business-reports (+0.083) but lost on xquad-de (-0.012) and xquad-zh (-0.007); it costs a second lexical pass: off by default. LLM modes: no LLM to evaluate with.
AUTO_OFFLINE: tuple[str, ...] = ()
AUTO_WITH_LLM: tuple[str, ...] = ()

# Pseudo-relevance feedback (RM3 over the first pass's best chunks) ---------------------------
PRF_FEEDBACK_CHUNKS = 5     # first-pass chunks taken as relevant
PRF_TERMS = 8               # expansion terms added to the full-text query ...
PRF_WEIGHT = 0.3            # ... the best one at this weight (query words weigh 1), the others in proportion
PRF_MIN_CHUNKS = 2          # a term must be in at least this many feedback chunks (one chunk's quirks are no topic)
PRF_MIN_CHARS = 2           # shorter lexemes are noise
PRF_MAX_DF_SHARE = 0.5      # a term in more than this share of the scope's chunks says nothing

# Gates: enhance only where the first pass is weak -----------------------------------------
# The first pass's best lexical score is BM25 as a share of what a chunk holding every query
# word would score (0..1). Above the gate the query's own words already found their chunk.
PRF_GATE_MAX_TOP = 0.5      # above this, no PRF: on business-reports and xquad-de every NDCG gain of PRF was on
                            # queries at or below it (275 of 298 and 17 of 22 queries), so it saves the second
                            # pass where it cannot gain (per-query NDCG@10 changes)
LLM_GATE_MAX_TOP = 0.4      # the LLM is asked only when the best chunk scores below this share
                            # (a chunk holding every query word once, at average length, scores 1/(1+k1) = 0.45)
LLM_GATE_MIN_WORDS = 1      # ... and the query has at least this many words
LLM_GATE_MAX_WORDS = 12     # ... and at most this many (a long query says enough on its own)

# LLM ------------------------------------------------------------------------------------
LLM_BUDGET_SECONDS = 2.0    # an answer later than this is dropped: the plain query is searched
LLM_CACHE_TTL = 7 * 24 * 3600
SYNONYM_WEIGHT = 0.5        # weight of the LLM's synonyms in the full-text query
SYNONYMS_MAX = 8
HYDE_WEIGHT = 0.5           # share of the hypothetical answer's vector in the blended query vector
HYDE_MAX_TOKENS = 160
