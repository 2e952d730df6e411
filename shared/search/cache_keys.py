"""Cache keys of a search: the exact key and the semantic-cache namespace.

The *scope* of a search is everything but the query text: sorted entity set,
canonical filters, every parameter that changes the result. Two searches share
a semantic namespace only if their scopes are equal, so a semantic hit can only
return a result computed for the same entities, filters and options.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from .request import SearchRequest

KEY_VERSION = 2  # bump when the result shape or scoring changes: old entries stop matching


@dataclass(frozen=True)
class CacheKeys:
    exact: str      # KV key suffix of the stored result (also the semantic index id)
    namespace: str  # semantic-cache namespace


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def scope(request: SearchRequest, entity_ids: list[str]) -> dict:
    return {
        "v": KEY_VERSION,
        "entities": sorted(set(entity_ids)),
        "filters": request.filters.normalized(),
        "params": request.model_dump(mode="json", exclude={"query", "entity_ids", "filters", "cache"}),
    }


def cache_keys(request: SearchRequest, entity_ids: list[str]) -> CacheKeys:
    """``request.query`` is already normalized (see request.normalize_query)."""
    namespace = _digest(scope(request, entity_ids))
    return CacheKeys(exact=_digest({"scope": namespace, "query": request.query}), namespace=namespace)
