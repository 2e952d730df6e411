"""Filtered hybrid retrieval in Postgres: one statement per search, or its two halves.

``search`` runs both halves in one statement (one round trip, one plan) once the query is
embedded and the blend is known. Apart, ``lexical`` needs only the query text, so it can run
while the query is being embedded (the model in the worker, BM25 in Postgres: two cores), and
its evidence can decide the blend (the router) or a second pass (query enhancement);
``hybrid`` then takes the embedding and the lexical matches and returns the fused, ranked rows.
All three are assembled once from the named fragments of ``shared/sql/search.sql`` and
converted to raw statements (``statements.py``); this module only turns a validated request
into their parameters and the rows into result dicts.
"""

from __future__ import annotations

import functools
import json
import re
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from .. import language, sqlfiles
from ..bindings.database import Connection, Database
from ..errors import BindingError
from . import defaults, plan_reuse
from .request import SearchRequest
from .statements import Statement, execute

_SQL = sqlfiles.load("search.sql")


_FRAGMENT = re.compile(r"/\*(\w+)\*/")


def _assemble(name: str, instead: dict[str, str] | None = None) -> str:
    """The statement with every ``/*fragment*/`` marker replaced by that named fragment (or by
    what ``instead`` gives for it)."""
    sql = _SQL[name]
    while (marker := _FRAGMENT.search(sql)) is not None:
        fragment = (instead or {}).get(marker.group(1), _SQL.get(marker.group(1)))
        if fragment is None:
            raise KeyError(f"search.sql: no fragment {marker.group(1)!r}")
        sql = sql[:marker.start()] + fragment + sql[marker.end():]
    return sql


def _one_statement(instead: dict[str, str]) -> str:
    # In one statement the scope's verdict comes from its own CTE, not back from the worker.
    return (_assemble("search", instead).replace("%(nonempty)s", "(SELECT nonempty FROM scope)")
            .replace("%(exact)s", "(SELECT exact FROM scope)"))


LEXICAL_SQL = _assemble("lexical")
HYBRID_SQL = _assemble("hybrid")
SEARCH_SQL = _one_statement({})
LEXICAL, HYBRID, SEARCH = (Statement.convert(sql) for sql in (LEXICAL_SQL, HYBRID_SQL, SEARCH_SQL))
# Planning is ~30% of a search statement's Postgres CPU and grows with what the statement holds,
# even what a constant then folds away. So each search runs the statement without the parts its
# parameters leave idle: the documents EXISTS (five copies) without document-level filters, the
# neighbours join without neighbours, the expansion CTE without enhancement terms. Each part left
# out would only have given nothing (a constant false, a NULL, no rows), so rows are the same.
# At most eight texts per statement, each prepared on its own per connection.
_LEAVE_OUT = {
    "document_filter": {"document_filter": ""},
    "neighbours": {"neighbours_column": "NULL::jsonb AS neighbours", "neighbours_join": ""},
    "expansion": {"expansion_cte": "", "expansion_terms": ""},
}


def idle_parts(params: dict[str, Any]) -> frozenset[str]:
    """The parts of the search statements these parameters leave idle (keys of _LEAVE_OUT)."""
    idle = set()
    if not params["document_filters"]:
        idle.add("document_filter")
    if params["neighbours"] <= 0:
        idle.add("neighbours")
    if not params["expansion_terms"] and params["expansion_text"] is None:
        idle.add("expansion")
    return frozenset(idle)


def dimension(params: dict[str, Any]) -> int | None:
    """The embedding's dimension: the HNSW walk casts to ``halfvec(dimension)``, the expression of the
    half-precision index (infra/migrations/0021_chunks_halfvec_hnsw.sql), which a typmod written in as
    a literal must match for the planner to use the index. None without an embedding (no walk)."""
    embedding = params.get("embedding")
    return None if embedding is None else len(embedding)


@functools.cache
def _variant_sql(name: str, idle: frozenset[str], dimension: int | None = None) -> str:
    instead = {fragment: text for part in idle for fragment, text in _LEAVE_OUT[part].items()}
    if dimension is not None:
        instead["dimension"] = f"({int(dimension)})"
    return _one_statement(instead) if name == "search" else _assemble(name, instead)


@functools.cache
def _variant(name: str, idle: frozenset[str], dimension: int | None = None) -> Statement:
    return Statement.convert(_variant_sql(name, idle, dimension))


def statement(name: str, params: dict[str, Any]) -> Statement:
    """``lexical``, ``hybrid`` or ``search`` for these parameters, without the parts they leave idle."""
    return _variant(name, idle_parts(params), dimension(params))


def whole_statement(name: str, params: dict[str, Any]) -> Statement:
    """``name`` with nothing left out, for these parameters' embedding dimension (the half-precision walk's
    cast): what ``statement`` trims from; tests compare the two row for row."""
    return _variant(name, frozenset(), dimension(params))


def planned_once(name: str, params: dict[str, Any]) -> Statement:
    """``statement(name, params)`` with every parameter but the embedding and the query text written
    in as literals, for a generic plan that is the custom plan (``plan_reuse.py``)."""
    idle, size = idle_parts(params), dimension(params)
    return plan_reuse.statement_for((name, idle, size), _variant_sql(name, idle, size), params)


_WORD = re.compile(r"\w")
# Query enhancement (shared/search/enhance/) adds terms to the lexical statement; none by default.
NO_EXPANSION = {"expansion_configs": [], "expansion_terms": [], "expansion_weights": [],
                "expansion_text": None, "expansion_text_weight": 0.0}
DOCUMENT_FILTERS = ("sources", "tags", "created_after", "created_before", "updated_after", "updated_before")


def candidate_count(k: int, *, dedupe: bool) -> int:
    factor = defaults.DEDUPE_CANDIDATE_FACTOR if dedupe else defaults.CANDIDATE_FACTOR
    return max(k, min(max(k * factor, defaults.MIN_CANDIDATES), defaults.MAX_CANDIDATES))


def uses_text(request: SearchRequest) -> bool:
    """Whether the lexical half runs at all: not for vector-only requests, nor for queries without a word."""
    return request.alpha < 1 and _WORD.search(request.query) is not None


@dataclass(frozen=True)
class LexicalResult:
    """What the ``lexical`` statement found without the embedding: whether the scope holds any
    document and is small enough for exact vector search, the best BM25 chunks (parallel lists,
    as ``hybrid`` takes them back), and the vocabulary terms that stood in for query words no
    chunk in scope holds."""

    nonempty: bool
    exact: bool
    entity_ids: list[str] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    text: list[float] = field(default_factory=list)
    trigram: list[float] = field(default_factory=list)
    corrections: dict[str, list[str]] = field(default_factory=dict)
    evidence: dict[str, Any] | None = None  # term statistics of the query, for the router
    # the router's probe: the best BM25 chunks' stored language and vector (pgvector's binary form)
    probe_languages: list[str | None] = field(default_factory=list)
    probe_vectors: list[bytes] = field(default_factory=list)

    def params(self) -> dict[str, Any]:
        return {"nonempty": self.nonempty, "exact": self.exact,
                "lexical_entity_ids": self.entity_ids, "lexical_ids": self.ids,
                "lexical_text": self.text, "lexical_trigram": self.trigram}


def build_params(request: SearchRequest, entity_ids: list[str], embedding: np.ndarray | None, *,
                 limit: int, include_text: bool | None = None, model_id: str | None = None,
                 lexical: LexicalResult | None = None) -> dict[str, Any]:
    """Parameters of both statements; ``limit`` rows come back (more than k when a reranker follows).

    ``lexical`` needs no embedding (pass None); ``hybrid`` needs the lexical statement's result and
    ``model_id``, the model ``embedding`` is of: a chunk's vector counts only when it is of the same.
    """
    filters = request.filters.normalized()
    websearch = request.text_mode == "websearch"
    use_text = uses_text(request)
    # websearch syntax states exactly what must (not) match: no stand-ins for unknown words
    use_trigram = use_text and not websearch
    # a list by now: "auto" was resolved by the search's collections stage
    collections = request.collections if isinstance(request.collections, list) else None
    return {
        "entity_ids": sorted(set(entity_ids)),
        **filters,
        "collections": collections,
        "document_filters": collections is not None or any(filters[name] is not None for name in DOCUMENT_FILTERS),
        "embedding": embedding,
        "model_id": model_id,
        "query": language.lexical_text(request.query),  # cut as the documents were (shared/language.py)
        "websearch": websearch,
        "use_vector": request.alpha > 0,
        "use_text": use_text,
        "use_trigram": use_trigram,
        "n": candidate_count(max(limit, request.k), dedupe=request.dedupe),
        "exact_max_docs": defaults.EXACT_MAX_DOCUMENTS,
        "exact_max_chunks": defaults.EXACT_MAX_CHUNKS,
        "exact_selective_max_chunks": defaults.EXACT_SELECTIVE_MAX_CHUNKS,
        "exact_max_share": defaults.EXACT_MAX_SHARE,
        "text_max_matches": defaults.TEXT_MAX_MATCHES,
        "bm25_k1": defaults.BM25_K1,
        "bm25_b": defaults.BM25_B,
        "tsv_weights": [1.0, defaults.ENRICHMENT_WEIGHT, 1.0, 1.0],
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
        **(lexical.params() if lexical is not None else {}),
        **NO_EXPANSION,
        "probe": 0,
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


class TunedConnections(weakref.WeakSet):
    """Pooled connections already given the search session settings (once per connection, so each
    statement of a search stays one round trip), and those settings. Owned by whoever owns the
    pool's searches."""

    def __init__(self, ef_search: int = defaults.HNSW_EF_SEARCH) -> None:
        super().__init__()
        self.ef_search = ef_search


def tuned_connections(ef_search: int = defaults.HNSW_EF_SEARCH) -> TunedConnections:
    """A fresh set: every connection is tuned before its first search statement. ``ef_search``: the
    HNSW walk's candidate list (the search worker's ``HNSW_EF_SEARCH``)."""
    return TunedConnections(ef_search)


async def tune_connection(conn: Connection, tuned: TunedConnections) -> None:
    """Apply the search session settings to a pooled connection, once."""
    if conn not in tuned:
        conn.prepared_max = plan_reuse.PREPARED_MAX  # reused plans are large (plan_reuse.py)
        await conn.execute(_SQL["session_settings"], {"ef_search": str(tuned.ef_search),
                                                      "fuzzy_similarity": str(defaults.FUZZY_SIMILARITY_FLOOR)})
        await conn.commit()
        tuned.add(conn)


@asynccontextmanager
async def _connection(db: Database, tuned: TunedConnections, *,
                      generic: bool = False) -> AsyncIterator[psycopg.AsyncConnection]:
    """A pooled connection for search statements: tuned, and in autocommit for the statement's
    span (a read needs no transaction of its own: no BEGIN and COMMIT round trips). ``generic``:
    one of the pool whose statements are all planned generically, for plan_reuse's texts."""
    try:
        async with (db.generic_connection() if generic else db.connection()) as conn:
            await tune_connection(conn, tuned)
            await conn.set_autocommit(True)
            try:
                yield conn
            finally:
                await conn.set_autocommit(False)
    except psycopg.Error as exc:  # wrapped once, at the boundary: the worker answers 503, not a stack trace
        raise BindingError(f"search query failed: {exc}") from exc


async def lexical(db: Database, request: SearchRequest, entity_ids: list[str], *, tuned: TunedConnections,
                  limit: int | None = None, expansion: dict[str, Any] | None = None,
                  probe: int = 0) -> LexicalResult:
    """The half that needs no embedding: the scope's size, and BM25 (with typo stand-ins) over it.
    ``expansion`` (keys of NO_EXPANSION) adds weighted terms: see shared/search/enhance/. ``probe``: how
    many of the best BM25 chunks come back with their language and vector (the router's)."""
    params = {**build_params(request, entity_ids, None, limit=limit or request.k), **(expansion or {}),
              "probe": probe}
    async with _connection(db, tuned) as conn:
        row = (await execute(conn, statement("lexical", params), params))[0]
    return LexicalResult(nonempty=row["nonempty"], exact=row["exact"], entity_ids=row["entity_ids"],
                         ids=row["ids"], text=row["text"], trigram=row["trigram"],
                         corrections=row["corrections"] or {}, evidence=row.get("evidence"),
                         probe_languages=row.get("probe_languages") or [],
                         probe_vectors=[bytes(v) for v in row.get("probe_vectors") or []])


async def retrieve(db: Database, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                   model_id: str, tuned: TunedConnections, lexical_result: LexicalResult | None = None,
                   limit: int | None = None,
                   include_text: bool | None = None) -> list[dict]:
    """Rows of the fused search, best first. ``lexical_result`` comes from :func:`lexical` with the
    same request, entities and limit (run here, first, when not given)."""
    limit = limit or request.k
    if lexical_result is None:
        lexical_result = await lexical(db, request, entity_ids, tuned=tuned, limit=limit)
    params = build_params(request, entity_ids, embedding, limit=limit, include_text=include_text,
                          model_id=model_id, lexical=lexical_result)
    async with _connection(db, tuned) as conn:
        return await execute(conn, statement("hybrid", params), params)


async def search(db: Database, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                 model_id: str, tuned: TunedConnections, limit: int | None = None,
                 include_text: bool | None = None, plan_once: bool = True) -> tuple[LexicalResult, list[dict]]:
    """Both halves in one statement: the rows :func:`retrieve` returns for this request, and what
    the lexical half found about the scope (its corrections and evidence; no chunk arrays).
    ``plan_once=False`` plans it at this call, as a custom plan (what the reused plan must equal)."""
    limit = limit or request.k
    params = build_params(request, entity_ids, embedding, limit=limit, include_text=include_text,
                          model_id=model_id)
    # planned once per entity set and request shape (plan_reuse.py): 1.4x the searches per second at 8 agents
    async with _connection(db, tuned, generic=plan_once) as conn:
        if plan_once:
            rows = await plan_reuse.execute(conn, planned_once("search", params), params)
        else:
            rows = await execute(conn, statement("search", params), params)
    # one row at least: the summary, joined to no chunk when nothing matched
    first = rows[0]
    # the JSON columns of the summary, on every row as text, decoded once (search.sql)
    summary = LexicalResult(nonempty=first["nonempty"], exact=first["exact"],
                            corrections=_json(first["corrections"]) or {}, evidence=_json(first["evidence"]))
    results = []
    for row in rows:
        if row["chunk_id"] is not None:
            for name in _SUMMARY_COLUMNS:
                del row[name]
            results.append(row)
    return summary, results


_SUMMARY_COLUMNS = ("nonempty", "exact", "corrections", "evidence")


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)
