"""Vector index binding (Vectorize-like) on a pgvector table.

Vectors live in ``vector_index`` keyed by (index name, id), grouped by a
``namespace``; queries only ever look inside one namespace. The semantic query
cache uses one namespace per (entity set, filters, parameters) scope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from psycopg.types.json import Jsonb

from .. import sqlfiles
from ..errors import ModelMismatchError
from .database import Database

SQL = sqlfiles.load("vectorize.sql")
UPSERT = SQL["upsert"]
# A namespace with fewer vectors than this is searched exactly (b-tree + sort, well under a
# millisecond); a larger one through the HNSW index (see vectorize.sql "query"), which holds
# only the vectors stored once their namespace had this many (migration 0016: the number is
# written there too, for the vectors already stored when it ran).
EXACT_MAX = 1000


@dataclass(frozen=True)
class Match:
    id: str
    score: float  # cosine similarity, 1 = identical
    metadata: dict


class PgVectorIndex:
    def __init__(self, db: Database, index_name: str, *, model_id: str, dimension: int) -> None:
        self.db = db
        self.index_name = index_name
        self.model_id = model_id
        self.dimension = dimension

    def _check(self, vector: np.ndarray) -> None:
        if vector.shape[-1] != self.dimension:
            raise ModelMismatchError(f"index {self.index_name}: vector has dimension {vector.shape[-1]}, "
                                     f"index holds {self.dimension}")

    async def upsert(self, id: str, vector: np.ndarray, *, namespace: str, metadata: dict | None = None) -> None:
        await self.db.execute(UPSERT, self.upsert_params(id, vector, namespace=namespace, metadata=metadata))

    def upsert_params(self, id: str, vector: np.ndarray, *, namespace: str, metadata: dict | None = None) -> dict:
        """The parameters of ``UPSERT`` for one vector, for a caller that writes several in one
        transaction (the search service's semantic-cache pointers)."""
        self._check(vector)
        return {"index": self.index_name, "namespace": namespace, "id": id, "model": self.model_id,
                "embedding": vector, "metadata": Jsonb(metadata or {}), "exact_max": EXACT_MAX}

    async def query(self, vector: np.ndarray, *, namespace: str, top_k: int = 1,
                    min_score: float = 0.0) -> list[Match]:
        self._check(vector)
        rows = await self.db.fetch(SQL["query"], {"index": self.index_name, "namespace": namespace,
                                                  "model": self.model_id, "embedding": vector, "k": top_k,
                                                  "exact_max": EXACT_MAX})
        return [Match(r["id"], float(r["score"]), r["metadata"]) for r in rows if r["score"] >= min_score]

    async def delete(self, *ids: str) -> int:
        if not ids:
            return 0
        return await self.db.execute(SQL["delete"], {"index": self.index_name, "ids": list(ids)})

    async def count(self, namespace: str | None = None) -> int:
        row = await self.db.fetchone(SQL["count"], {"index": self.index_name, "namespace": namespace})
        return int(row["n"])

    def describe(self) -> dict:
        return {"type": "vectorize", "index_name": self.index_name, "model_id": self.model_id,
                "dimension": self.dimension}
