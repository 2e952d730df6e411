"""``edgeindex router train``: per-query NDCG of every strategy bin through the real stack, then a fit.

For each BEIR dataset: ingest the corpus through the upload worker (or reuse an entity that
holds it), then for every judged query ask ``POST /search`` once with ``strategy: "auto"``
(whose ``routing.features`` are exactly what the router sees at serving time) and once per bin
(text, hybrid at each alpha, vector), all with ``cache: false``. The rows (query, features,
NDCG@10 and Recall@10 of each bin) are saved, so fitting, leave-one-dataset-out and the
built-in model need no second pass over the stack.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..routing.features import NAMES
from ..routing.model import DEFAULT_BINS, RouterModel, bin_name
from . import metrics
from .beir import Dataset
from .edgeindex_client import EdgeIndexClient
from .routing_summary import mix
from .runner import entity_name, search_body
from .stack import Endpoints

RECALL_WEIGHT = 0.5  # the reward is NDCG@10 + this * Recall@10: the goals name both
# The fit's defaults, chosen by leave-one-dataset-out with a nested check across every development
# set under both local embedding models (scripts/select_router_settings.py; docs/routing.md says how).
DECISION = "alpha"
ALPHA_BINS = (("text", 0.0), ("vector", 1.0))
FEATURES = ("query_language_unknown", "scope_language_unknown")
L2 = 1e-2
SWITCH_COST = 0.1   # the "bin" decision's prior toward the fixed blend, in reward units
# every alpha is measured once per query: the continuous fit reads each query's reward curve
# from them, and bins can be chosen from the saved rows without a second pass
COLLECT_BINS = tuple((bin_name(a / 10), a / 10) for a in range(11))


def bin_params(alpha: float) -> dict:
    if alpha <= 0:
        return {"strategy": "text"}
    if alpha >= 1:
        return {"strategy": "vector"}
    return {"strategy": "hybrid", "alpha": alpha}


async def collect(dataset: Dataset, endpoints: Endpoints, *, k: int = 10, entity: str | None = None,
                  bins=COLLECT_BINS, model: str = "", progress: Callable[[str], None] = print) -> dict:
    """Rows of one dataset: {qid: {"features", "ndcg": {bin: v}, "recall": {bin: v}}}, and the entity."""
    queries = dataset.judged_queries
    if entity:
        entity_id, key = entity, endpoints.admin_key
    else:
        entity_id = entity_name(dataset)
        async with EdgeIndexClient(endpoints.upload_url, endpoints.search_url, endpoints.admin_key) as admin:
            await admin.create_entity(entity_id, name=f"edgeindex router training on {dataset.name}")
            key = await admin.create_key(entity_id)
    async with EdgeIndexClient(endpoints.upload_url, endpoints.search_url, key) as client:
        documents = list(dataset.corpus.values())
        progress(f"{dataset.name}: entity {entity_id}, {len(documents)} documents")
        ingest = await client.ingest(entity_id, documents, source=f"beir:{dataset.name}", upload=not entity,
                                     progress=progress)
        if ingest.failed:
            progress(f"warning: {len(ingest.failed)} documents failed to ingest")
        feats: dict[str, dict] = {}
        runs: dict[str, dict[str, list[str]]] = {name: {} for name, _ in bins}
        for qid, text in queries.items():
            answer = await _search(client, search_body(text, entity_id, k, {"strategy": "auto"}))
            feats[qid] = answer["routing"]["features"]
            for name, alpha in bins:
                answer = await _search(client, search_body(text, entity_id, k, bin_params(alpha)))
                runs[name][qid] = list(dict.fromkeys(r["document_id"] for r in answer["results"]))
        scores = {name: metrics.per_query(dataset.qrels, run, k) for name, run in runs.items()}
    rows = {qid: {"features": feats[qid], "ndcg": {n: scores[n][qid]["ndcg"] for n, _ in bins},
                  "recall": {n: scores[n][qid]["recall"] for n, _ in bins}} for qid in queries}
    means = {n: round(float(np.mean([r["ndcg"][n] for r in rows.values()])), 4) for n, _ in bins}
    progress(f"{dataset.name}: NDCG@{k} per bin {means}")
    return {"dataset": dataset.name, "model": model, "path": str(dataset.path), "entity_id": entity_id, "k": k,
            "bins": [{"name": n, "alpha": a} for n, a in bins], "rows": rows}


async def _search(client: EdgeIndexClient, body: dict) -> dict:
    return await client.search_answer(body)


def matrices(collected: list[dict], features=NAMES, bins=DEFAULT_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Features, rewards (queries x bins) and sample weights (each dataset counts the same)."""
    model = RouterModel.blank(bins=bins, features=features)
    names = [n for n, _ in model.bins]
    x, r, w, sets = [], [], [], []
    for data in collected:
        rows = data["rows"]
        measured = {b["name"] for b in data.get("bins") or []}
        if measured and (missing := [n for n in names if n not in measured]):
            raise ValidationError(f"{data['dataset']}: the saved rows hold no {', '.join(missing)} "
                                  f"(measured: {', '.join(sorted(measured))}); collect again or pass --bins",
                                  field="bins")
        for row in rows.values():
            x.append([float(row["features"].get(f, 0.0)) for f in model.features])
            r.append([reward(row, n) for n in names])
            w.append(1.0 / len(rows))
            sets.append(data["dataset"])
    return np.array(x), np.array(r), np.array(w), sets


def reward(row: dict, name: str) -> float:
    return row["ndcg"][name] + RECALL_WEIGHT * row["recall"][name]


def grid_of(collected: list[dict]) -> list[tuple[str, float]]:
    """The alphas every dataset measured, increasing (the continuous fit's reward curve)."""
    common = None
    for data in collected:
        alphas = {(b["name"], float(b["alpha"])) for b in data.get("bins") or []}
        common = alphas if common is None else common & alphas
    grid = sorted(common or (), key=lambda b: b[1])
    if len(grid) < 2 or grid[0][1] != 0.0 or grid[-1][1] != 1.0:
        raise ValidationError("a continuous alpha needs rows measured from alpha 0 to 1 "
                              f"(these hold {[a for _, a in grid]}); collect again", field="data")
    return grid


def fit(collected: list[dict], *, l2: float = L2, features=FEATURES, switch_cost: float = SWITCH_COST,
        bins=None, decision: str = DECISION) -> RouterModel:
    """The router fitted on these datasets.

    ``decision="alpha"``: a continuous alpha per query over ``bins`` (default text and vector),
    fitted on each query's reward curve; ``l2`` pulls it toward the best single alpha of the data.
    ``decision="bin"``: one of ``bins`` (default DEFAULT_BINS) per query; ``switch_cost`` is a prior
    toward the fixed blend: its bin gets that much extra reward in the fit, so another bin is
    chosen only where the training data show it ahead by more than that."""
    if decision == "alpha":
        model = RouterModel.blank(bins=bins or ALPHA_BINS, features=features)
        grid = grid_of(collected)
        x, r, w, _ = matrices(collected, features, grid)
        model.fit_alpha(x, np.array([a for _, a in grid]), r, w, l2=l2)
    elif decision == "bin":
        model = RouterModel.blank(bins=bins or DEFAULT_BINS, features=features)
        x, r, w, _ = matrices(collected, features, model.bins)
        r = r.copy()
        r[:, model.default_bin] += switch_cost
        model.fit(x, r, w, l2=l2)
    else:
        raise ValidationError(f"decision is 'alpha' or 'bin', not {decision!r}", field="decision")
    model.meta = {"source": "train", "trained_on": ", ".join(_label(d) for d in collected),
                  "queries": int(x.shape[0]), "reward": f"ndcg@10 + {RECALL_WEIGHT} * recall@10",
                  "decision": decision, "l2": l2,
                  **({"switch_cost": switch_cost} if decision == "bin" else {}),
                  "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    return model


def _label(data: dict) -> str:
    return f"{data['dataset']} ({data['model']})" if data.get("model") else data["dataset"]


def at_alpha(row: dict, metric: str, alpha: float, grid: list[tuple[str, float]]) -> float:
    """A query's metric at any alpha, linear between the two measured alphas around it."""
    for (lo_name, lo), (hi_name, hi) in zip(grid, grid[1:], strict=False):
        if lo <= alpha <= hi:
            share = (alpha - lo) / (hi - lo)
            return (1 - share) * row[metric][lo_name] + share * row[metric][hi_name]
    return row[metric][grid[0][0] if alpha < grid[0][1] else grid[-1][0]]


FIXED = ("text", "hybrid-0.8", "vector")   # the fixed modes a user can name (hybrid is the 0.8 blend)


def score(model: RouterModel, data: dict) -> dict:
    """On one dataset: mean NDCG@10 / Recall@10 of the model's choices, of every fixed mode, and of the
    per-query oracle (each query's best measured alpha by NDCG), with the regret against it, the
    choice mix (by strategy, and by alpha to 0.1) and the share of queries off the modal choice."""
    rows = list(data["rows"].values())
    grid = [(b["name"], float(b["alpha"])) for b in data.get("bins") or []] or list(model.bins)
    chosen = [model.choose(row["features"]) for row in rows]
    out: dict[str, Any] = {"auto": {m: float(np.mean([at_alpha(r, m, a, grid) for r, (_, a) in zip(rows, chosen, strict=True)]))
                                    for m in ("ndcg", "recall")}}
    for name in FIXED:
        if name in rows[0]["ndcg"]:
            out[name] = {m: float(np.mean([r[m][name] for r in rows])) for m in ("ndcg", "recall")}
    out["oracle"] = {"ndcg": float(np.mean([max(r["ndcg"][n] for n, _ in grid) for r in rows]))}
    out = {k: {f"{m}@10": round(v, 4) for m, v in d.items()} for k, d in out.items()}
    best_fixed = max(out[n]["ndcg@10"] for n in FIXED if n in out)
    out["gain_over_best_fixed"] = round(out["auto"]["ndcg@10"] - best_fixed, 4)
    out["regret"] = round(1 - out["auto"]["ndcg@10"] / out["oracle"]["ndcg@10"], 4) if out["oracle"]["ndcg@10"] else 0
    out.update(mix([a for _, a in chosen]))
    return out


def leave_one_out(collected: list[dict], **fit_args) -> dict[str, dict]:
    """Train on every dataset but one, score on that one; for each."""
    results = {}
    for held in collected:
        model = fit([d for d in collected if d is not held], **fit_args)
        results[held["dataset"]] = score(model, held)
    return results


def save(collected: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(collected, indent=1))


def load(path: Path) -> list[dict]:
    data = json.loads(Path(path).read_text())
    return data if isinstance(data, list) else [data]
