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

import numpy as np

from ..errors import ValidationError
from ..routing.features import NAMES
from ..routing.model import DEFAULT_BINS, RouterModel, bin_name
from . import metrics
from .beir import Dataset
from .edgeindex_client import EdgeIndexClient
from .runner import entity_name, search_body
from .stack import Endpoints

RECALL_WEIGHT = 0.5  # the reward is NDCG@10 + this * Recall@10: the goals name both
# the fit's defaults (chosen by leave-one-dataset-out with a nested check:
# scripts/select_router_settings.py): the two features that say whether the embedding model knows
# the query's language and the language of the chunks full text found for it. The other features
# are still computed and logged (telemetry, feedback, `--features`), but across the four
# evaluation sets they do not carry from one language to another.
L2 = 1e-3
SWITCH_COST = 0.1   # reward units (NDCG@10 + ½ Recall@10), chosen with L2 and FEATURES
FEATURES = ("query_language_unknown", "scope_language_unknown")
# every bin a model might choose among is measured once per query, so that the bins themselves
# can be chosen from the saved rows (scripts/select_router_settings.py) without a second pass
COLLECT_BINS = tuple((bin_name(a), a) for a in (0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0))


def bin_params(alpha: float) -> dict:
    if alpha <= 0:
        return {"strategy": "text"}
    if alpha >= 1:
        return {"strategy": "vector"}
    return {"strategy": "hybrid", "alpha": alpha}


async def collect(dataset: Dataset, endpoints: Endpoints, *, k: int = 10, entity: str | None = None,
                  bins=COLLECT_BINS, progress: Callable[[str], None] = print) -> dict:
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
    return {"dataset": dataset.name, "path": str(dataset.path), "entity_id": entity_id, "k": k,
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
            r.append([row["ndcg"][n] + RECALL_WEIGHT * row["recall"][n] for n in names])
            w.append(1.0 / len(rows))
            sets.append(data["dataset"])
    return np.array(x), np.array(r), np.array(w), sets


def fit(collected: list[dict], *, l2: float = L2, features=FEATURES, switch_cost: float = SWITCH_COST,
        bins=DEFAULT_BINS) -> RouterModel:
    """The router fitted on these datasets. ``switch_cost`` is a prior toward the fixed blend: the
    blend's bin gets that much extra reward in the fit, so another bin is chosen only where the
    training data show it ahead by more than that (a few datasets cannot show where an unseen
    domain will sit, and the blend is the safe choice there)."""
    x, r, w, _ = matrices(collected, features, bins)
    model = RouterModel.blank(bins=bins, features=features)
    r = r.copy()
    r[:, model.default_bin] += switch_cost
    model.fit(x, r, w, l2=l2)
    model.meta = {"source": "train", "trained_on": ", ".join(d["dataset"] for d in collected),
                  "queries": int(x.shape[0]), "reward": f"ndcg@10 + {RECALL_WEIGHT} * recall@10",
                  "l2": l2, "switch_cost": switch_cost,
                  "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    return model


def score(model: RouterModel, data: dict) -> dict:
    """Mean NDCG@10 / Recall@10 of the model's choices on one dataset, of every fixed bin, and of the
    per-query oracle (the best bin of each query by NDCG), with the choice mix."""
    rows = list(data["rows"].values())
    names = [n for n, _ in model.bins]
    chosen = [names[model.decide(row["features"])] for row in rows]
    out = {"auto": {"ndcg@10": float(np.mean([row["ndcg"][c] for row, c in zip(rows, chosen, strict=True)])),
                    "recall@10": float(np.mean([row["recall"][c] for row, c in zip(rows, chosen, strict=True)]))}}
    for n in names:
        out[n] = {"ndcg@10": float(np.mean([row["ndcg"][n] for row in rows])),
                  "recall@10": float(np.mean([row["recall"][n] for row in rows]))}
    # the best of the model's own bins per query (the rows may hold more bins than the model uses)
    out["oracle"] = {"ndcg@10": float(np.mean([max(row["ndcg"][n] for n in names) for row in rows]))}
    out["mix"] = {n: chosen.count(n) for n in names if chosen.count(n)}
    out["regret"] = round(1 - out["auto"]["ndcg@10"] / out["oracle"]["ndcg@10"], 4) if out["oracle"]["ndcg@10"] else 0
    return {k: ({m: round(v, 4) for m, v in v.items()} if isinstance(v, dict) and k != "mix" else v)
            for k, v in out.items()}


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
