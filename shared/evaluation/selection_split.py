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


# How two one-tool requests are joined into one two-task request (two_task_requests).
CONNECTORS = (", and then ", ". Also, ", ", and ", " and also ")


def two_task_requests(queries: list[dict], count: int, seed: int = 41) -> list[dict]:
    """``count`` two-task requests, each two of ``queries``' one-tool requests (different tools) joined by
    a connector, expecting both tools: the shape of a plugin catalogue's two-task requests, made from a
    catalogue's own requests. The same for the same queries and seed."""
    import random

    def needed(q: dict) -> list[str]:
        return q["expected"] if isinstance(q["expected"], list) else [q["expected"]]

    singles = [q for q in queries if len(needed(q)) == 1]
    if len({needed(q)[0] for q in singles}) < 2:
        return []
    rng = random.Random(seed)
    made: list[dict] = []
    while len(made) < count:
        a, b = rng.sample(singles, 2)
        if needed(a) == needed(b):
            continue
        join = rng.choice(CONNECTORS)
        second = b["query"][0].lower() + b["query"][1:] if join.startswith(", ") else b["query"]
        made.append({"query": a["query"].rstrip(".?! ") + join + second, "expected": needed(a) + needed(b),
                     "id": f"two-task-{len(made)}"})
    return made
