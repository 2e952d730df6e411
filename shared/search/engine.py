"""Filtered hybrid retrieval in Postgres: one SQL statement per search.

The statement (``shared/sql/search.sql``) is assembled once from its named
fragments; this module only turns a validated request into its parameters and
the rows into result dicts.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import numpy as np
import psycopg

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import BindingError
from . import defaults
from .request import SearchRequest

_SQL = sqlfiles.load("search.sql")
SEARCH_SQL = (_SQL["search"]
              .replace("/*candidate_filter*/", _SQL["candidate_filter"])
              .replace("/*text_query_all*/", _SQL["text_query_all"]))
_WORD = re.compile(r"\w")
DOCUMENT_FILTERS = ("sources", "tags", "created_after", "created_before", "updated_after", "updated_before")


def candidate_count(k: int, *, dedupe: bool) -> int:
    factor = defaults.DEDUPE_CANDIDATE_FACTOR if dedupe else defaults.CANDIDATE_FACTOR
    return max(k, min(max(k * factor, defaults.MIN_CANDIDATES), defaults.MAX_CANDIDATES))


def build_params(request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                 limit: int, include_text: bool | None = None) -> dict[str, Any]:
    """Parameters of SEARCH_SQL; ``limit`` rows come back (more than k when a reranker follows)."""
    filters = request.filters.normalized()
    websearch = request.text_mode == "websearch"
    use_text = request.alpha < 1 and _WORD.search(request.query) is not None
    # websearch syntax states exactly what must (not) match: no stand-ins for unknown words
    use_trigram = use_text and not websearch
    return {
        "entity_ids": sorted(set(entity_ids)),
        **filters,
        "document_filters": any(filters[name] is not None for name in DOCUMENT_FILTERS),
        "embedding": embedding,
        "query": request.query,
        "websearch": websearch,
        "use_vector": request.alpha > 0,
        "use_text": use_text,
        "use_trigram": use_trigram,
        "n": candidate_count(max(limit, request.k), dedupe=request.dedupe),
        "exact_max_docs": defaults.EXACT_MAX_DOCUMENTS,
        "exact_max_chunks": defaults.EXACT_MAX_CHUNKS,
        "text_max_matches": defaults.TEXT_MAX_MATCHES,
        "bm25_k1": defaults.BM25_K1,
        "bm25_b": defaults.BM25_B,
        "fuzzy_min_chars": defaults.FUZZY_MIN_CHARS,
        "fuzzy_max_words": defaults.FUZZY_MAX_WORDS,
        "fuzzy_terms": defaults.FUZZY_TERMS,
        "alpha": request.alpha,
        "fusion": request.fusion,
        "rrf_k": defaults.RRF_K,
        "vector_threshold": request.vector_threshold,
        "text_threshold": request.text_threshold,
        "trigram_threshold": request.trigram_threshold,
        "dedupe": request.dedupe,
        "limit": limit,
        "include_text": request.include.text if include_text is None else include_text,
        "include_summary": request.include.summary,
        "neighbours": request.include.neighbours,
    }


def shape(row: dict, request: SearchRequest, *, text: bool = False) -> dict:
    """A result as the API returns it (``text=True`` keeps the text even if not asked: the reranker needs it)."""
    with_text = request.include.text or text
    document = {"title": row["title"], "source": row["source"], "tags": row["tags"]}
    if request.include.summary:
        document["summary"] = row["summary"]
    result = {
        "chunk_id": str(row["chunk_id"]),
        "document_id": row["document_id"],
        "entity_id": row["entity_id"],
        "position": row["position"],
        "start_char": row["start_char"],
        "end_char": row["end_char"],
        "score": round(float(row["score"]), 6),
        "scores": {"vector": round(float(row["vector"]), 6), "text": round(float(row["text"]), 6),
                   "trigram": round(float(row["trigram"]), 6)},
        "document": document,
    }
    if with_text:
        result["text"] = row["content"]
    if request.include.neighbours:
        neighbours = row["neighbours"] or []
        if not with_text:
            for n in neighbours:
                n.pop("text", None)
        result["neighbours"] = neighbours
    return result


# Pooled connections already given the search session settings (once per connection,
# so a search stays one statement, one round trip).
_tuned: weakref.WeakSet = weakref.WeakSet()


async def tune_connection(conn: psycopg.AsyncConnection) -> None:
    """Apply the search session settings to a pooled connection, once."""
    if conn not in _tuned:
        await conn.execute(_SQL["session_settings"], {"ef_search": str(defaults.HNSW_EF_SEARCH),
                                                      "fuzzy_similarity": str(defaults.FUZZY_SIMILARITY_FLOOR)})
        await conn.commit()
        _tuned.add(conn)


async def retrieve(db: Database, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                   limit: int | None = None, include_text: bool | None = None) -> list[dict]:
    """Raw rows of the search statement, best first."""
    params = build_params(request, entity_ids, embedding, limit=limit or request.k, include_text=include_text)
    try:
        async with db.connection() as conn:
            await tune_connection(conn)
            cur = await conn.execute(SEARCH_SQL, params)
            return await cur.fetchall()
    except psycopg.Error as exc:  # wrapped once, at the boundary: the worker answers 503, not a stack trace
        raise BindingError(f"search query failed: {exc}") from exc
