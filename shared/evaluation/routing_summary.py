"""What the router did in an evaluation: the strategy mix it served, and how far it is from the
per-query oracle (each query's best measured choice)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..routing.model import strategy_of

FIXED_MODES = ("text", "hybrid", "vector")   # the fixed modes a user can name


def mix(alphas: Iterable[float]) -> dict:
    """The strategy mix of these choices, their alphas to 0.1, and the share off the modal choice."""
    alphas = list(alphas)
    strategies = [strategy_of(a) for a in alphas]
    buckets = [f"{round(a, 1):g}" for a in alphas]
    modal = max(set(buckets), key=lambda b: (buckets.count(b), b)) if buckets else ""
    return {"mix": {s: strategies.count(s) for s in ("text", "hybrid", "vector") if s in strategies},
            "alphas": {b: buckets.count(b) for b in sorted(set(buckets), key=float)},
            "off_modal": round(1 - buckets.count(modal) / len(buckets), 4) if buckets else 0.0}


def served(decisions: dict[str, dict]) -> dict:
    """``mix`` of what the answers' ``routing`` says was served (query text -> routing)."""
    return {"queries": len(decisions), **mix(float(d["alpha"]) for d in decisions.values())}


def oracle(systems: dict[str, dict], metric: str = "ndcg") -> dict | None:
    """Our fixed modes against ``auto`` query by query: the oracle picks each query's best fixed mode.
    ``systems``: the results' systems (``per_query`` of each); None without auto and a fixed mode."""
    auto = systems.get("edgeindex-auto")
    fixed = {m: systems[f"edgeindex-{m}"] for m in FIXED_MODES if f"edgeindex-{m}" in systems}
    if auto is None or not fixed:
        return None
    queries = list(auto["per_query"])
    best = [max(s["per_query"][q][metric] for s in fixed.values()) for q in queries]
    means = {m: float(np.mean([s["per_query"][q][metric] for q in queries])) for m, s in fixed.items()}
    got = float(np.mean([auto["per_query"][q][metric] for q in queries]))
    top = float(np.mean(best))
    best_mode = max(means, key=lambda m: means[m])
    return {"metric": f"{metric}@10", "over": sorted(fixed), "oracle": round(top, 4), "auto": round(got, 4),
            "best_fixed": {"mode": best_mode, "value": round(means[best_mode], 4)},
            "gain_over_best_fixed": round(got - means[best_mode], 4),
            "regret": round(1 - got / top, 4) if top else 0.0}
