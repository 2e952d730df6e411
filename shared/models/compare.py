"""Two models compared on the deployment's own feedback (``edgeindex models compare MODEL``).

Each search an agent sent feedback for (``POST /feedback``: the chunks it found useful) is a judged
query: its text and entities come from the search's telemetry row, and the useful chunks that still
exist are its relevant ones. Each model ranks every chunk of those
entities by its own vectors alone (an exact search: the serving model's in ``chunks``, the other's
in ``chunk_vectors``), and the two rankings are scored with NDCG@k, Recall@k and MRR, paired per query.

The useful chunks were picked from answers the serving model helped rank, so the comparison leans
towards it: a backfilled model that scores as well or better on them is a strong sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..bindings.ai import Embedder
from ..bindings.database import Database
from ..errors import Conflict, ValidationError
from ..sqlfiles import load
from .backfill import serving_model

SQL = load("models.sql")
BOOTSTRAP = 2000


@dataclass
class Judged:
    query: str
    entity_ids: list[str]
    relevant: set[str]


async def judged_queries(db: Database, limit: int) -> list[Judged]:
    """The latest ``limit`` searches with feedback naming a useful chunk that still exists."""
    rows = await db.fetch(SQL["feedback_judgements"], {"limit": limit})
    return [Judged(r["query"], list(r["entity_ids"]), set(r["relevant"])) for r in rows if r["relevant"]]


def scores(ranked: list[str], relevant: set[str], k: int) -> dict[str, float]:
    gains = [1.0 if chunk in relevant else 0.0 for chunk in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    first = next((i for i, chunk in enumerate(ranked) if chunk in relevant), None)
    return {"ndcg": dcg / ideal if ideal else 0.0, "recall": sum(gains) / len(relevant),
            "mrr": 1 / (first + 1) if first is not None else 0.0}


def paired(a: list[float], b: list[float], *, seed: int = 0) -> dict[str, float]:
    """Mean of b - a with a 95% bootstrap interval, and the queries each side wins."""
    diff = np.asarray(b) - np.asarray(a)
    draws = np.random.default_rng(seed).integers(0, len(diff), (BOOTSTRAP, len(diff)))
    means = diff[draws].mean(axis=1)
    return {"mean": round(float(diff.mean()), 4), "low": round(float(np.quantile(means, 0.025)), 4),
            "high": round(float(np.quantile(means, 0.975)), 4), "better": int((diff > 0).sum()),
            "worse": int((diff < 0).sum())}


async def compare(db: Database, serving: Embedder, other: Embedder, *, k: int = 10, limit: int = 1000) -> dict:
    """``other``'s dense ranking against the serving model's on the judged queries."""
    if not 1 <= k <= 100:
        raise ValidationError("k must be between 1 and 100", field="k")
    if not 1 <= limit <= 100_000:
        raise ValidationError("limit must be between 1 and 100000", field="limit")
    model_id, _ = await serving_model(db)
    if serving.model_id != model_id:
        raise Conflict(f"the serving model is {model_id!r}, not {serving.model_id!r}", field="model")
    if other.model_id == model_id:
        raise Conflict(f"{model_id!r} is the serving model: compare it with another", field="model")
    judged = await judged_queries(db, limit)
    per_model: dict[str, list[dict[str, float]]] = {model_id: [], other.model_id: []}
    for embedder, statement in ((serving, "serving_dense_search"), (other, "shadow_search")):
        for j in judged:
            vector = await embedder.embed_query(j.query.casefold())   # as search embeds it (case-folded)
            rows = await db.fetch(SQL[statement], {"model_id": embedder.model_id, "entity_ids": j.entity_ids,
                                                   "embedding": vector, "k": k})
            per_model[embedder.model_id].append(scores([r["chunk_id"] for r in rows], j.relevant, k)
                                                if rows else {})
    # a query the other model has no vectors for (its backfill did not reach those entities) is left out
    both = [i for i in range(len(judged)) if per_model[model_id][i] and per_model[other.model_id][i]]
    result: dict = {"serving_model": model_id, "model": other.model_id, "k": k, "queries": len(both),
                    "left_out": len(judged) - len(both),
                    "relevant_per_query": round(sum(len(judged[i].relevant) for i in both) / len(both), 2)
                    if both else 0.0,
                    "models": {model_id: {}, other.model_id: {}}, "difference": {}}
    for metric in ("ndcg", "recall", "mrr"):
        name = "mrr" if metric == "mrr" else f"{metric}@{k}"
        a = [per_model[model_id][i][metric] for i in both]
        b = [per_model[other.model_id][i][metric] for i in both]
        for model, values in ((model_id, a), (other.model_id, b)):
            result["models"][model][name] = round(sum(values) / len(values), 4) if values else None
        if both:
            result["difference"][name] = paired(a, b)
    return result
