"""``edgeindex eval --tools DIR`` / ``--indices DIR``: tool and index selection, against baselines.

The catalogue goes into a fresh tenant through the real routes (``POST
/entities/{e}/tools`` or ``/indices``), every query through ``POST /tools/select`` or
``POST /indices/select``, timed by the client over a keep-alive connection. Baselines
run in this process on the same catalogue: names only (BM25 over the name's words),
BM25 (bm25s, English stems) over name, description and parameter/field names, and plain
embedding similarity with the same model over the same text.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from ..errors import ValidationError
from ..selection.definitions import count_tokens, parse_tool
from ..selection.indices import parse_index
from ..selection.text import split_identifier
from .stack import Endpoints

REGISTER_BATCH = 200


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        raise ValidationError(f"{path} does not exist", field="dir")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if values else 0.0


class _HTTP:
    def __init__(self, base: str, key: str) -> None:
        self.base = base.rstrip("/")
        self.session = aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"},
                                             timeout=aiohttp.ClientTimeout(total=600),
                                             connector=aiohttp.TCPConnector(limit=4, keepalive_timeout=60))

    async def call(self, method: str, path: str, body: Any, expect=(200, 201)) -> dict:
        async with self.session.request(method, self.base + path, json=body) as resp:
            payload = await resp.json(content_type=None)
            if resp.status not in expect:
                raise ValidationError(f"{method} {path} answered {resp.status}: {str(payload)[:400]}", field="route")
            return payload

    async def close(self) -> None:
        await self.session.close()


async def _tenant(endpoints: Endpoints, prefix: str) -> tuple[str, str]:
    entity = f"{prefix}-{int(time.time())}"
    admin = _HTTP(endpoints.upload_url, endpoints.admin_key)
    try:
        await admin.call("POST", "/admin/entities", {"id": entity, "kind": "user", "name": entity})
        key = (await admin.call("POST", "/admin/keys", {"name": f"eval {entity}", "entity_ids": [entity]}))["key"]
    finally:
        await admin.close()
    return entity, key


# -- baselines ---------------------------------------------------------------------------------

class _EmbeddingBaseline:
    name = "embedding"

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        from ..bindings.ai import local_embedder
        from ..search.service import prepare_query_embedding

        self.embedder = local_embedder()
        prepare_query_embedding(self.embedder)
        self.ids = ids
        self.matrix = self.embedder.encode_sync(texts)

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        scores = self.matrix @ self.embedder.encode_query_sync(query)
        order = np.argsort(-scores)[:k]
        return [self.ids[i] for i in order], (time.perf_counter() - started) * 1000


def _baselines(ids: list[str], name_texts: list[str], full_texts: list[str], progress) -> dict:
    from .baselines import BM25Baseline

    progress("building baselines (names only, bm25s, embedding)")
    return {"names_only": BM25Baseline(ids, name_texts), "bm25": BM25Baseline(ids, full_texts),
            "embedding": _EmbeddingBaseline(ids, full_texts)}


# -- tools -------------------------------------------------------------------------------------

@dataclass
class _Scored:
    recall5: list[float]
    recall10: list[float]
    all5: list[float]
    sent: list[int]
    reduction: list[float]
    latency: list[float]

    def summary(self) -> dict:
        return {"recall@5": round(float(np.mean(self.recall5)), 4), "recall@10": round(float(np.mean(self.recall10)), 4),
                "all_needed@5": round(float(np.mean(self.all5)), 4), "mean_sent": round(float(np.mean(self.sent)), 2),
                "token_reduction": round(float(np.mean(self.reduction)), 4),
                "p50_ms": _percentile(self.latency, 50), "p99_ms": _percentile(self.latency, 99),
                "queries": len(self.recall5)}


def _recall(expected: list[str], ranked: list[str], k: int) -> float:
    return sum(e in ranked[:k] for e in expected) / len(expected)


async def evaluate_tools(folder: Path, endpoints: Endpoints, *, k: int = 5,
                         progress: Callable[[str], None] = print) -> dict:
    raw_tools = _jsonl(folder / "tools.jsonl")
    queries = _jsonl(folder / "queries.jsonl")
    tools = [parse_tool(t, f"tools.jsonl[{i}]") for i, t in enumerate(raw_tools)]
    tokens = {t.name: count_tokens(t.function()) for t in tools}
    total_tokens = sum(tokens.values())
    entity, key = await _tenant(endpoints, "tools-eval")
    http = _HTTP(endpoints.search_url, key)
    results: dict[str, dict] = {}
    try:
        started = time.perf_counter()
        for start in range(0, len(raw_tools), REGISTER_BATCH):
            await http.call("POST", f"/entities/{entity}/tools", {"tools": raw_tools[start:start + REGISTER_BATCH]})
        progress(f"registered {len(tools)} tools in {time.perf_counter() - started:.1f} s; "
                 f"{total_tokens} definition tokens in all")
        ours = _Scored([], [], [], [], [], [])
        fallbacks = 0
        for n, q in enumerate(queries):
            body = {"query": q["query"], "entity_ids": [entity], "k": k}
            mark = time.perf_counter()
            answer = await http.call("POST", "/tools/select", body)
            ours.latency.append((time.perf_counter() - mark) * 1000)
            wide = await http.call("POST", "/tools/select", {**body, "k": max(10, k)})
            names = [t["name"] for t in answer["tools"]]
            wide_names = [t["name"] for t in wide["tools"]]
            expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            ours.recall5.append(_recall(expected, names, 5))
            ours.recall10.append(_recall(expected, wide_names, 10))
            ours.all5.append(float(all(e in names[:5] for e in expected)))
            ours.sent.append(len(names))
            ours.reduction.append(1 - answer["tokens"]["selected"] / answer["tokens"]["registry"])
            fallbacks += answer["fallback"] is not None
            if (n + 1) % 250 == 0:
                progress(f"  {n + 1}/{len(queries)} queries")
        results["edgeindex"] = {**ours.summary(), "fallbacks": fallbacks}
    finally:
        await http.close()

    ids = [t.name for t in tools]
    name_texts = [" ".join(split_identifier(t.name)) for t in tools]
    full_texts = [f"{' '.join(split_identifier(t.name))}: {t.description} "
                  f"{' '.join(' '.join(split_identifier(p)) for p in (t.parameters.get('properties') or {}))}"
                  for t in tools]
    for name, baseline in _baselines(ids, name_texts, full_texts, progress).items():
        scored = _Scored([], [], [], [], [], [])
        for q in queries:
            expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            ranked, ms = baseline.search(q["query"], max(10, k))
            top = ranked[:k]
            scored.latency.append(ms)
            scored.recall5.append(_recall(expected, ranked, 5))
            scored.recall10.append(_recall(expected, ranked, 10))
            scored.all5.append(float(all(e in ranked[:5] for e in expected)))
            scored.sent.append(len(top))
            scored.reduction.append(1 - sum(tokens[t] for t in top) / total_tokens)
        results[name] = scored.summary()
    return {"tools": results, "dataset": {"path": str(folder), "tools": len(tools), "queries": len(queries),
                                          "definition_tokens": total_tokens, "k": k, "entity": entity}}


# -- indices -----------------------------------------------------------------------------------

def _index_files(folder: Path, variant: str) -> tuple[Path, Path]:
    if variant == "tables":
        return folder / "indices_tables.jsonl", folder / "queries_tables.jsonl"
    return folder / "indices.jsonl", folder / "queries.jsonl"


def _rank_metrics(expected: list[str], ranked: list[str]) -> dict:
    first = next((i for i, r in enumerate(ranked) if r in expected), None)
    return {"top1": float(first == 0), "top3": float(first is not None and first < 3),
            "top5": float(first is not None and first < 5), "mrr": 1.0 / (first + 1) if first is not None else 0.0,
            "all_needed@5": float(all(e in ranked[:5] for e in expected))}


def _index_summary(rows: list[dict], latency: list[float], multi: bool) -> dict:
    keys = ["top1", "top3", "top5", "mrr"] + (["all_needed@5"] if multi else [])
    out = {key: round(float(np.mean([r[key] for r in rows])), 4) for key in keys}
    return {**out, "p50_ms": _percentile(latency, 50), "p99_ms": _percentile(latency, 99), "queries": len(rows)}


async def evaluate_indices(folder: Path, endpoints: Endpoints, *, variant: str = "databases",
                           progress: Callable[[str], None] = print) -> dict:
    index_path, query_path = _index_files(folder, variant)
    raw = _jsonl(index_path)
    queries = _jsonl(query_path)
    defs = [parse_index(r, f"{index_path.name}[{i}]") for i, r in enumerate(raw)]
    multi = any(isinstance(q["expected"], list) and len(q["expected"]) > 1 for q in queries)
    entity, key = await _tenant(endpoints, "indices-eval")
    http = _HTTP(endpoints.search_url, key)
    results: dict[str, dict] = {}
    try:
        started = time.perf_counter()
        payload = [{"name": d.name, "description": d.description, "fields": list(d.fields)} for d in defs]
        for start in range(0, len(payload), 500):
            await http.call("POST", f"/entities/{entity}/indices", {"indices": payload[start:start + 500]})
        progress(f"registered {len(defs)} indices in {time.perf_counter() - started:.1f} s")
        rows, latency, confident = [], [], 0
        for q in queries:
            mark = time.perf_counter()
            answer = await http.call("POST", "/indices/select", {"query": q["query"], "entity_ids": [entity], "k": 10})
            latency.append((time.perf_counter() - mark) * 1000)
            expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            rows.append(_rank_metrics(expected, [i["name"] for i in answer["indices"]]))
            confident += answer["confident"]
        results["edgeindex"] = {**_index_summary(rows, latency, multi), "confident": round(confident / len(queries), 4)}
    finally:
        await http.close()
    ids = [d.name for d in defs]
    name_texts = [" ".join(split_identifier(d.name)) for d in defs]
    full_texts = [f"{' '.join(split_identifier(d.name))}: {d.description} "
                  f"{' '.join(' '.join(split_identifier(f)) for f in d.fields)}" for d in defs]
    for name, baseline in _baselines(ids, name_texts, full_texts, progress).items():
        rows, latency = [], []
        for q in queries:
            expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            ranked, ms = baseline.search(q["query"], 10)
            latency.append(ms)
            rows.append(_rank_metrics(expected, ranked))
        results[name] = _index_summary(rows, latency, multi)
    return {"indices": results, "dataset": {"path": str(folder), "variant": variant, "indices": len(defs),
                                            "queries": len(queries), "entity": entity}}


def format_table(results: dict) -> str:
    section = "tools" if "tools" in results else "indices"
    systems = results[section]
    columns = [c for c in next(iter(systems.values())) if c != "queries"]
    lines = ["system".ljust(12) + "".join(c.rjust(15) for c in columns)]
    for name, row in systems.items():
        lines.append(name.ljust(12) + "".join(str(row.get(c, "")).rjust(15) for c in columns))
    return "\n".join(lines)


def run(kind: str, folder: Path, endpoints: Endpoints, *, variant: str = "databases", k: int = 5,
        progress: Callable[[str], None] = print) -> dict:
    if kind == "tools":
        return asyncio.run(evaluate_tools(folder, endpoints, k=k, progress=progress))
    return asyncio.run(evaluate_indices(folder, endpoints, variant=variant, progress=progress))
