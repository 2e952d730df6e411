"""The semantic cache's in-process tier: the pointers this process stored, searched before Postgres.

The Postgres lookup (``semantic_cache_nearest``) costs a pool checkout, a round trip and the driver's
Python, about a sixth of a semantic hit's CPU. This tier keeps the pointers this process wrote (unit
vector, the exact key it names, its guard signature, its expiry) per namespace and searches them
exactly (one matrix-vector product, ~50 µs over 4,096). It holds nothing Postgres does not: every pointer
goes to Postgres too, and a query it cannot answer goes on to the statement. A pointer's entry is served
under the exact cache's rule (``SearchService._cached``), so it can serve nothing stale; one whose entry
is gone is forgotten here as there.

Bound: ``max_vectors`` pointers over all namespaces (4,096; 0 turns
it off; ~8-11 MiB at 384 dimensions); the least recently searched namespace goes first. Used from the
event loop's thread only (no lock).
"""

from __future__ import annotations

import time
from collections import OrderedDict

import numpy as np

MAX_VECTORS = 4096   # pointers kept in process (see above)
# A namespace's first allocation, doubled as it fills: with many namespaces of one or two pointers each
# (a scope per tenant and filters), a larger first allocation would multiply the memory the bound allows.
FIRST_ROWS = 1


class _Scope:
    """One namespace's pointers: row i of ``vectors`` is the pointer to ``keys[i]`` (None: a free row)."""

    __slots__ = ("vectors", "keys", "signatures", "until", "stored", "rows", "free")

    def __init__(self, dimension: int) -> None:
        self.vectors = np.zeros((FIRST_ROWS, dimension), dtype=np.float32)
        self.keys: list[str | None] = [None] * FIRST_ROWS
        self.signatures: list[str | None] = [None] * FIRST_ROWS
        self.until = np.zeros(FIRST_ROWS)   # 0: a free row, which no lookup can match
        self.stored = np.zeros(FIRST_ROWS, dtype=np.int64)   # when each row was written, in remember calls
        self.rows = 0                       # rows in use or freed (the high-water mark)
        self.free: list[int] = []           # the rows below it holding no pointer

    def grow(self) -> None:
        more = len(self.keys)
        self.vectors = np.vstack([self.vectors, np.zeros_like(self.vectors)])
        self.until = np.concatenate([self.until, np.zeros(more)])
        self.stored = np.concatenate([self.stored, np.zeros(more, dtype=np.int64)])
        self.keys.extend([None] * more)
        self.signatures.extend([None] * more)


class LocalSemanticCache:
    def __init__(self, *, max_vectors: int = MAX_VECTORS) -> None:
        self.max_vectors = max_vectors
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        self._where: dict[str, tuple[str, int]] = {}   # exact key -> (namespace, row)
        self._written = 0   # remember calls so far: the rows' age

    def __len__(self) -> int:
        return len(self._where)

    def remember(self, namespace: str, key: str, vector: np.ndarray, signature: str, until: float) -> None:
        """The pointer from ``vector`` to the exact key ``key``, servable until ``until`` (epoch seconds)
        at most. A key stored again replaces its pointer, as Postgres's upsert does."""
        if self.max_vectors <= 0:
            return
        unit = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(unit))
        if not norm:
            return
        self.forget(key)
        scope = self._scopes.get(namespace)
        if scope is None:
            scope = self._scopes[namespace] = _Scope(unit.shape[0])
        self._scopes.move_to_end(namespace)
        row = self._row_for(namespace, scope)
        scope.vectors[row] = unit / norm
        scope.keys[row] = key
        scope.signatures[row] = signature
        scope.until[row] = until
        self._written += 1
        scope.stored[row] = self._written
        self._where[key] = (namespace, row)

    def _row_for(self, namespace: str, scope: _Scope) -> int:
        # ``namespace`` was just moved to the end: the first one is another, least recently used
        while len(self._where) >= self.max_vectors and len(self._scopes) > 1:
            self._drop_scope(*next(iter(self._scopes.items())))
        if len(self._where) >= self.max_vectors:
            # alone at the bound, so every row holds a pointer (a row is added or a free one taken
            # only below it): the oldest is overwritten
            row = int(np.argmin(scope.stored[:scope.rows]))
            self._unset(scope, row)
            return row
        if scope.free:
            return scope.free.pop()
        if scope.rows == len(scope.keys):
            scope.grow()
        scope.rows += 1
        return scope.rows - 1

    def _drop_scope(self, namespace: str, scope: _Scope) -> None:
        del self._scopes[namespace]
        for key in scope.keys[:scope.rows]:
            if key is not None:
                del self._where[key]

    def nearest(self, namespace: str, vector: np.ndarray, *, min_score: float, signature: str,
                k: int) -> list[str]:
        """The exact keys of the at most ``k`` pointers of ``namespace`` nearest to ``vector`` with a
        cosine similarity of at least ``min_score``, the same ``signature`` and not expired, nearest
        first."""
        scope = self._scopes.get(namespace)
        if scope is None or k <= 0:
            return []
        self._scopes.move_to_end(namespace)
        query = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(query))
        if not norm:
            return []
        scores = scope.vectors[:scope.rows] @ (query / norm)
        rows = np.flatnonzero((scores >= min_score) & (scope.until[:scope.rows] > time.time()))
        found: list[str] = []
        for row in rows[np.argsort(-scores[rows], kind="stable")]:
            if scope.signatures[row] == signature:
                found.append(scope.keys[row])
                if len(found) == k:
                    break
        return found

    def forget(self, key: str) -> None:
        where = self._where.get(key)
        if where is None:
            return
        namespace, row = where
        scope = self._scopes[namespace]
        self._unset(scope, row)
        scope.free.append(row)
        if len(scope.free) == scope.rows:   # empty: a namespace holds memory only while it holds pointers
            del self._scopes[namespace]

    def _unset(self, scope: _Scope, row: int) -> None:
        del self._where[scope.keys[row]]
        scope.keys[row] = scope.signatures[row] = None
        scope.until[row] = 0
        scope.vectors[row] = 0
