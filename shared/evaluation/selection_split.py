"""A fixed split of evaluation queries into a tuning half and a held-out half.

Selection constants were tuned on the ``tune`` half only; reports give the ``held_out``
half next to all queries so over-fitting to the development sets shows. The split is a
hash of the query's id (or its text), so it is the same in every run and every process.
"""

from __future__ import annotations

import hashlib
from typing import Any


def split_of(query_id: Any) -> str:
    digest = hashlib.sha256(str(query_id).encode("utf-8")).digest()
    return "tune" if digest[0] % 2 == 0 else "held_out"


def query_key(query: dict) -> Any:
    return query.get("id", query.get("query"))
