"""What the router did: strategy mix, regret against the per-query oracle, latency.

``summary(db)`` returns it as JSON-ready data (the admin page calls it); ``edgeindex router
report`` prints it and draws PNG charts. Regret needs judgements: here they are the
``POST /feedback`` events (the reward each bin would have earned on the returned results),
compared with the reward of the bin that served; evaluation runs report their own regret
against qrels (``edgeindex router train --leave-one-out``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from .. import sqlfiles
from ..bindings.database import Database

SQL = sqlfiles.load("routing.sql")


def _percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    a = np.array(values, dtype=float)
    return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3),
            "p99": round(float(np.percentile(a, 99)), 3), "n": len(values)}


def _bin_name(strategy: str | None, alpha: float | None) -> str | None:
    if strategy is None:
        return None
    if strategy in ("text", "vector"):
        return strategy
    return f"{strategy}-{alpha:g}"


async def summary(db: Database, *, days: int = 30, limit: int = 100_000) -> dict[str, Any]:
    rows = await db.fetch(SQL["report_rows"], {"days": days, "limit": limit})
    feedback = await db.fetch(SQL["report_feedback"], {"days": days})
    served = Counter(_bin_name(r["strategy"], r["alpha"]) for r in rows)
    shadow = Counter(_bin_name(r["shadow_strategy"], r["shadow_alpha"]) for r in rows if r["shadow_strategy"])
    requested = Counter(r["requested"] or "(none)" for r in rows)
    cache = Counter(r["cache"] for r in rows)
    timings: dict[str, list[float]] = {}
    for r in rows:
        for name, value in (r["timings"] or {}).items():
            if isinstance(value, int | float):
                timings.setdefault(name, []).append(float(value))
    regret = []
    for f in feedback:
        rewards = f["rewards"] or {}
        chosen = _bin_name(f["strategy"], f["alpha"])
        if rewards and chosen in rewards:
            regret.append({"oracle": max(rewards.values()), "served": rewards[chosen],
                           "shadow": rewards.get(_bin_name(f["shadow_strategy"], f["shadow_alpha"]))})
    oracle = float(np.mean([g["oracle"] for g in regret])) if regret else None
    served_reward = float(np.mean([g["served"] for g in regret])) if regret else None
    shadow_rewards = [g["shadow"] for g in regret if g["shadow"] is not None]
    return {
        "days": days, "searches": len(rows),
        "strategy_mix": dict(served.most_common()), "shadow_mix": dict(shadow.most_common()),
        "requested": dict(requested.most_common()), "cache": dict(cache.most_common()),
        "latency_ms": {name: _percentiles(values) for name, values in sorted(timings.items())},
        "regret": {"feedback_events": len(regret), "oracle_reward": oracle, "served_reward": served_reward,
                   "shadow_reward": float(np.mean(shadow_rewards)) if shadow_rewards else None,
                   "regret": (oracle - served_reward) if regret else None},
    }


def format_summary(data: dict) -> str:
    lines = [f"searches in the last {data['days']} days: {data['searches']}"]
    for title, key in (("strategy mix (served)", "strategy_mix"), ("shadow choices", "shadow_mix"),
                       ("requested", "requested"), ("cache", "cache")):
        if data[key]:
            total = sum(data[key].values())
            lines.append(f"{title}: " + ", ".join(f"{k} {v} ({100 * v / total:.0f}%)" for k, v in data[key].items()))
    regret = data["regret"]
    if regret["feedback_events"]:
        lines.append(f"regret against the per-query oracle over {regret['feedback_events']} feedback events: "
                     f"{regret['regret']:.4f} (oracle {regret['oracle_reward']:.4f}, served {regret['served_reward']:.4f}"
                     + (f", shadow {regret['shadow_reward']:.4f}" if regret["shadow_reward"] is not None else "") + ")")
    else:
        lines.append("regret: no feedback events yet")
    lines.append("latency (ms)      p50      p95      p99")
    for name, p in data["latency_ms"].items():
        if p:
            lines.append(f"  {name:<14}{p['p50']:>8.3f} {p['p95']:>8.3f} {p['p99']:>8.3f}")
    return "\n".join(lines)


def charts(data: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = sorted(set(data["strategy_mix"]) | set(data["shadow_mix"]))
    x = np.arange(len(names))
    ax.bar(x - 0.2, [data["strategy_mix"].get(n, 0) for n in names], 0.4, label="served")
    ax.bar(x + 0.2, [data["shadow_mix"].get(n, 0) for n in names], 0.4, label="shadow")
    ax.set_xticks(x, names)
    ax.set_ylabel("searches")
    ax.set_title("strategy mix")
    ax.legend()
    fig.tight_layout()
    written.append(out / "strategy_mix.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    lat = {k: v for k, v in data["latency_ms"].items() if v}
    keys = list(lat)
    for i, q in enumerate(("p50", "p95", "p99")):
        ax.bar(np.arange(len(keys)) + (i - 1) * 0.27, [lat[k][q] for k in keys], 0.27, label=q)
    ax.set_xticks(np.arange(len(keys)), keys, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("ms")
    ax.set_title("search timings (route_ms: the router)")
    ax.legend()
    fig.tight_layout()
    written.append(out / "latency.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    regret = data["regret"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = ["oracle", "served", "shadow"]
    values = [regret["oracle_reward"] or 0, regret["served_reward"] or 0, regret["shadow_reward"] or 0]
    ax.bar(labels, values)
    ax.set_title(f"feedback reward ({regret['feedback_events']} events)")
    fig.tight_layout()
    written.append(out / "regret.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    return written
