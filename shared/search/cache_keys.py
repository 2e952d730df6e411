"""Cache keys of a search: the exact key and the semantic-cache namespace.

The *scope* of a search is everything but the query text: sorted entity set,
canonical filters, every parameter that changes the result, and the graph the
query vectors come from (an fp32 or 8-bit query encoder: bindings/query_weights.py
ranks near-ties a little differently). Two searches share a semantic namespace only
if their scopes are equal, so a semantic hit can only return a result computed for
the same entities, filters and options, with the same query vectors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import orjson

from .request import SearchRequest

KEY_VERSION = 2  # bump when the result shape or scoring changes: old entries stop matching


@dataclass(frozen=True)
class CacheKeys:
    exact: str      # KV key suffix of the stored result (also the semantic index id)
    namespace: str  # semantic-cache namespace


def _digest(value: object) -> str:
    # Canonical JSON (sorted keys) through orjson: a key is made on every search, exact hits
    # included, where the standard library's encoder was ~5% of a hit's CPU. Every float of a
    # scope is validated finite (request.py), so orjson's null for NaN cannot merge two scopes.
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def scope(request: SearchRequest, entity_ids: list[str], query_vectors: str = "") -> dict:
    return {
        "v": KEY_VERSION,
        "query_vectors": query_vectors,
        "entities": sorted(set(entity_ids)),
        "filters": request.filters.normalized(),
        "params": request.model_dump(mode="json", exclude={"query", "entity_ids", "filters", "cache"}),
    }


def cache_keys(request: SearchRequest, entity_ids: list[str], query_vectors: str = "") -> CacheKeys:
    """``request.query`` is already normalized (see request.normalize_query); ``query_vectors`` names the
    graph this process embeds queries with (LocalEmbedder.query_vectors; "" for a remote model)."""
    namespace = _digest(scope(request, entity_ids, query_vectors))
    return CacheKeys(exact=_digest({"scope": namespace, "query": request.query}), namespace=namespace)
