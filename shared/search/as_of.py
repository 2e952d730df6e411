"""Search as of a time: every document in scope as its version live then held it.

The live index (HNSW, BM25 statistics, the router's evidence, the caches) describes the live
versions only, so a search ``as_of`` runs one statement of its own (``history.sql``:
``search_as_of``): exact cosine distances and ``ts_rank_cd`` over the chunks of the versions live
at that time, fused as the request's blend. Its answers are never cached.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import language, sqlfiles
from ..bindings.database import Database
from ..errors import ValidationError
from .request import SearchRequest

SQL = sqlfiles.load("history.sql")
_WORD = re.compile(r"\w+")


class AsOfSearch:
    """What ``SearchService`` calls for a request with ``as_of`` (given to it at start-up)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def check(self, request: SearchRequest) -> None:
        check(request)

    def uses_vectors(self, request: SearchRequest) -> bool:
        return blend(request)[0]

    def blend(self, request: SearchRequest) -> tuple[bool, float]:
        return blend(request)

    async def search(self, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray | None,
                     model_id: str) -> list[dict]:
        return await search(self.db, request, entity_ids, embedding, model_id)


def check(request: SearchRequest) -> None:
    if request.rerank:
        raise ValidationError("rerank is not available with as_of", field="rerank")
    if request.include.neighbours:
        raise ValidationError("include.neighbours is not available with as_of", field="include.neighbours")
    if request.collections == "auto":
        raise ValidationError('collections "auto" is not available with as_of; name the collections',
                              field="collections")


def blend(request: SearchRequest) -> tuple[bool, float]:
    """(whether vectors take part, the weight of the vector score)."""
    if request.strategy == "text":
        return False, 0.0
    if request.strategy == "vector":
        return True, 1.0
    return True, request.alpha


def terms(query: str) -> str:
    """The query's words for ``websearch_to_tsquery``, any of them matching (as the live search's
    default ``text_mode``)."""
    return " or ".join(_WORD.findall(language.lexical_text(query)))


async def search(db: Database, request: SearchRequest, entity_ids: list[str],
                 embedding: np.ndarray | None, model_id: str) -> list[dict]:
    """``model_id``: the model ``embedding`` is of; a chunk's vector counts only when it is of the same."""
    use_vector, alpha = blend(request)
    filters = request.filters.normalized()
    params: dict[str, Any] = {
        "entity_ids": entity_ids, "as_of": request.as_of, "terms": terms(request.query),
        "use_vector": use_vector, "alpha": alpha, "vector_threshold": request.vector_threshold,
        "embedding": embedding if use_vector else None, "model_id": model_id, "k": request.k,
        "collections": request.collections if isinstance(request.collections, list) else None,
        **{name: filters[name] for name in ("document_ids", "exclude_document_ids", "exclude_chunk_ids", "sources",
                                            "tags", "created_after", "created_before", "updated_after",
                                            "updated_before")}}
    rows = await db.fetch(SQL["search_as_of"], params)
    return [_shape(row, request) for row in rows]


def _shape(row: dict, request: SearchRequest) -> dict:
    document = {"title": row["title"], "source": row["source"], "tags": row["tags"]}
    if request.include.summary:
        document["summary"] = row["summary"]
    result = {"chunk_id": str(row["chunk_id"]), "document_id": row["document_id"], "entity_id": row["entity_id"],
              "position": row["position"], "start_char": row["start_char"], "end_char": row["end_char"],
              "version": row["version"], "score": round(float(row["score"]), 6),
              "scores": {"vector": round(float(row["vector"]), 6), "text": round(float(row["text"]), 6),
                         "trigram": 0.0},
              "document": document}
    if request.include.text:
        result["text"] = row["content"]
    return result
