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

import numpy as np
from edgeindex_client import AsyncClient, EdgeIndexClientError

from ..errors import ValidationError
from ..selection.definitions import count_tokens, parse_tool
from ..selection.indices import parse_index
from ..selection.text import split_identifier
from .selection_split import query_key, split_of, two_task_requests
from .stack import Endpoints

REGISTER_BATCH = 200
TWO_TASK_REQUESTS = 300


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        raise ValidationError(f"{path} does not exist", field="dir")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if values else 0.0


class _SDK:
    """The project's SDK (``edgeindex_client.AsyncClient``) for one key, without retries: a 429 or a 503
    during an evaluation is a finding, not something to hide in a latency."""

    def __init__(self, endpoints: Endpoints, key: str) -> None:
        self.client = AsyncClient(key, upload_url=endpoints.upload_url, search_url=endpoints.search_url,
                                  timeout=600.0, max_retries=0)

    async def post(self, path: str, body: Any) -> dict:
        """Registration and feedback: routes the SDK has no method for yet, through its ``request``."""
        reply = await self.client.request("POST", path, service="search", json=body)
        if reply.status not in (200, 201):
            raise ValidationError(f"POST {path} answered {reply.status}: {str(reply.body)[:400]}", field="route")
        return reply.body

    async def select_tools(self, query: str, entity: str, k: int) -> dict:
        return (await self.client.select_tools(query, entity_ids=[entity], k=k)).model_dump()

    async def select_index(self, query: str, entity: str, k: int) -> dict:
        return (await self.client.select_index(query, entity_ids=[entity], k=k)).model_dump()

    async def close(self) -> None:
        await self.client.aclose()


async def _tenant(endpoints: Endpoints, prefix: str) -> tuple[str, str]:
    entity = f"{prefix}-{int(time.time())}"
    async with AsyncClient(endpoints.admin_key, upload_url=endpoints.upload_url, search_url=endpoints.search_url,
                           max_retries=0) as admin:
        await admin.create_entity(entity, "user", entity)
        key = (await admin.create_key(f"eval {entity}", [entity])).key
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


def _subset_summary(scored: _Scored, keep: list[int]) -> dict:
    """The metrics (latency aside) of the queries ``keep``."""
    sub = _Scored(*[[values[i] for i in keep] for values in
                    (scored.recall5, scored.recall10, scored.all5, scored.sent, scored.reduction, scored.latency)])
    return {key: value for key, value in sub.summary().items() if not key.endswith("_ms")}


def _split_summaries(scored: _Scored, splits: list[str]) -> dict:
    """The same metrics on the tuning half and on the held-out half of the queries (selection_split.py)."""
    return {part: _subset_summary(scored, [i for i, s in enumerate(splits) if s == part])
            for part in ("tune", "held_out")}


def _expected(q: dict) -> list[str]:
    return q["expected"] if isinstance(q["expected"], list) else [q["expected"]]


async def _run_tool_queries(sdk: _SDK, entity: str, queries: list[dict], k: int, progress) -> tuple[_Scored, int, list]:
    scored = _Scored([], [], [], [], [], [])
    fallbacks = 0
    answers = []
    for n, q in enumerate(queries):
        mark = time.perf_counter()
        answer = await sdk.select_tools(q["query"], entity, k)
        scored.latency.append((time.perf_counter() - mark) * 1000)
        wide = await sdk.select_tools(q["query"], entity, max(10, k))
        names = [t["name"] for t in answer["tools"]]
        wide_names = [t["name"] for t in wide["tools"]]
        expected = _expected(q)
        scored.recall5.append(_recall(expected, names, 5))
        scored.recall10.append(_recall(expected, wide_names, 10))
        scored.all5.append(float(all(e in names[:5] for e in expected)))
        scored.sent.append(len(names))
        scored.reduction.append(1 - answer["tokens"]["selected"] / answer["tokens"]["registry"])
        fallbacks += answer["fallback"] is not None
        answers.append(names)
        if (n + 1) % 250 == 0:
            progress(f"  {n + 1}/{len(queries)} queries")
    return scored, fallbacks, answers


async def _feedback_mode(sdk: _SDK, entity: str, queries: list[dict], before: _Scored, answers: list,
                         splits: list[str], k: int, progress) -> dict:
    """Does ``POST /tools/feedback`` improve later selections?

    The agent reports the tools it used (the expected ones) for every query of the tuning half; then
    the held-out half, never fed back, is selected again. Reported: the held-out queries whose needed
    tools all received feedback (same tools, other requests), and all held-out queries (nothing fed back
    may hurt them), before and after.
    """
    fed = [i for i, s in enumerate(splits) if s == "tune"]
    fed_tools = {t for i in fed for t in _expected(queries[i])}
    started = time.perf_counter()
    for i in fed:
        await sdk.post("/tools/feedback", {"query": queries[i]["query"], "entity_ids": [entity],
                                           "used": _expected(queries[i]), "selected": answers[i]})
    progress(f"fed back {len(fed)} requests in {time.perf_counter() - started:.1f} s")
    held = [i for i, s in enumerate(splits) if s == "held_out"]
    after, _, _ = await _run_tool_queries(sdk, entity, [queries[i] for i in held], k, progress)
    out = {"fed_back_queries": len(fed), "fed_back_tools": len(fed_tools)}
    for label, rows in (("held_out_same_tools", [j for j, i in enumerate(held)
                                                 if set(_expected(queries[i])) <= fed_tools]),
                        ("held_out_all", list(range(len(held))))):
        out[label] = {"queries": len(rows)}
        for name, source, index in (("before", before, [held[j] for j in rows]), ("after", after, rows)):
            out[label][name] = {"recall@5": round(float(np.mean([source.recall5[i] for i in index])), 4) if index else None,
                                "all_needed@5": round(float(np.mean([source.all5[i] for i in index])), 4) if index else None,
                                "mean_sent": round(float(np.mean([source.sent[i] for i in index])), 2) if index else None}
    return out


async def evaluate_tools(folder: Path, endpoints: Endpoints, *, k: int = 5, feedback: bool = True,
                         progress: Callable[[str], None] = print) -> dict:
    raw_tools = _jsonl(folder / "tools.jsonl")
    queries = _jsonl(folder / "queries.jsonl")
    splits = [split_of(query_key(q)) for q in queries]
    tools = [parse_tool(t, f"tools.jsonl[{i}]") for i, t in enumerate(raw_tools)]
    tokens = {t.name: count_tokens(t.function()) for t in tools}
    total_tokens = sum(tokens.values())
    entity, key = await _tenant(endpoints, "tools-eval")
    sdk = _SDK(endpoints, key)
    results: dict[str, dict] = {}
    extra: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        for start in range(0, len(raw_tools), REGISTER_BATCH):
            await sdk.post(f"/entities/{entity}/tools", {"tools": raw_tools[start:start + REGISTER_BATCH]})
        progress(f"registered {len(tools)} tools in {time.perf_counter() - started:.1f} s; "
                 f"{total_tokens} definition tokens in all")
        ours, fallbacks, answers = await _run_tool_queries(sdk, entity, queries, k, progress)
        results["edgeindex"] = {**ours.summary(), "fallbacks": fallbacks}
        # two-task requests made of the catalogue's own one-tool requests (selection_split.two_task_requests)
        pairs = two_task_requests(queries, TWO_TASK_REQUESTS)
        if pairs:
            pair_scores, _, _ = await _run_tool_queries(sdk, entity, pairs, k, progress)
        extra["splits"] = {"edgeindex": _split_summaries(ours, splits)}
        if feedback:
            try:
                extra["feedback"] = await _feedback_mode(sdk, entity, queries, ours, answers, splits, k, progress)
            except (EdgeIndexClientError, ValidationError) as exc:   # reported, not fatal: the main figures stand
                extra["feedback"] = {"error": str(exc)}
    finally:
        await sdk.close()

    ids = [t.name for t in tools]
    name_texts = [" ".join(split_identifier(t.name)) for t in tools]
    full_texts = [f"{' '.join(split_identifier(t.name))}: {t.description} "
                  f"{' '.join(' '.join(split_identifier(p)) for p in (t.parameters.get('properties') or {}))}"
                  for t in tools]
    two_task: dict[str, dict] = {"edgeindex": pair_scores.summary()} if pairs else {}
    groups = [q.get("bfcl_category") or q.get("category") for q in queries]
    by_group: dict[str, dict] = {"edgeindex": _group_summaries(ours, groups)} if any(groups) else {}
    for name, baseline in _baselines(ids, name_texts, full_texts, progress).items():
        scored = _baseline_scored(baseline, queries, tokens, total_tokens, k)
        results[name] = scored.summary()
        extra["splits"][name] = _split_summaries(scored, splits)
        if pairs:
            two_task[name] = _baseline_scored(baseline, pairs, tokens, total_tokens, k).summary()
        if by_group:
            by_group[name] = _group_summaries(scored, groups)
    if two_task:
        extra["two_task"] = two_task
    if by_group:
        extra["by_category"] = by_group
    return {"tools": results, **extra, "dataset": {"path": str(folder), "tools": len(tools), "queries": len(queries),
                                          "two_task_requests": len(pairs),
                                          "definition_tokens": total_tokens, "k": k, "entity": entity}}


def _baseline_scored(baseline, queries: list[dict], tokens: dict[str, int], total_tokens: int, k: int) -> _Scored:
    scored = _Scored([], [], [], [], [], [])
    for q in queries:
        expected = _expected(q)
        ranked, ms = baseline.search(q["query"], max(10, k))
        top = ranked[:k]
        scored.latency.append(ms)
        scored.recall5.append(_recall(expected, ranked, 5))
        scored.recall10.append(_recall(expected, ranked, 10))
        scored.all5.append(float(all(e in ranked[:5] for e in expected)))
        scored.sent.append(len(top))
        scored.reduction.append(1 - sum(tokens[t] for t in top) / total_tokens)
    return scored


def _group_summaries(scored: _Scored, groups: list) -> dict:
    """The metrics per group of queries (tools-bfcl's BFCL categories)."""
    return {group: _subset_summary(scored, [i for i, g in enumerate(groups) if g == group])
            for group in sorted({g for g in groups if g})}


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


def _index_splits(rows: list[dict], splits: list[str], multi: bool) -> dict:
    out = {}
    for part in ("tune", "held_out"):
        keep = [r for r, s in zip(rows, splits) if s == part]
        out[part] = {key: value for key, value in _index_summary(keep, [], multi).items() if not key.endswith("_ms")}
    return out


async def evaluate_indices(folder: Path, endpoints: Endpoints, *, variant: str = "databases",
                           progress: Callable[[str], None] = print) -> dict:
    index_path, query_path = _index_files(folder, variant)
    raw = _jsonl(index_path)
    queries = _jsonl(query_path)
    defs = [parse_index(r, f"{index_path.name}[{i}]") for i, r in enumerate(raw)]
    multi = any(isinstance(q["expected"], list) and len(q["expected"]) > 1 for q in queries)
    splits = [split_of(query_key(q)) for q in queries]
    entity, key = await _tenant(endpoints, "indices-eval")
    sdk = _SDK(endpoints, key)
    results: dict[str, dict] = {}
    split_results: dict[str, dict] = {}
    try:
        started = time.perf_counter()
        payload = [{"name": d.name, "description": d.description, "fields": list(d.fields)} for d in defs]
        for start in range(0, len(payload), 500):
            await sdk.post(f"/entities/{entity}/indices", {"indices": payload[start:start + 500]})
        progress(f"registered {len(defs)} indices in {time.perf_counter() - started:.1f} s")
        rows, latency, confident, confident_right = [], [], 0, 0
        for q in queries:
            mark = time.perf_counter()
            answer = await sdk.select_index(q["query"], entity, 10)
            latency.append((time.perf_counter() - mark) * 1000)
            expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            rows.append(_rank_metrics(expected, [i["name"] for i in answer["indices"]]))
            confident += answer["confident"]
            confident_right += answer["confident"] and rows[-1]["top1"] == 1.0
        # confident_right: the share of confident answers whose first choice is right (the calibration)
        results["edgeindex"] = {**_index_summary(rows, latency, multi), "confident": round(confident / len(queries), 4),
                                "confident_right": round(confident_right / confident, 4) if confident else None}
        split_results["edgeindex"] = _index_splits(rows, splits, multi)
    finally:
        await sdk.close()
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
        split_results[name] = _index_splits(rows, splits, multi)
    return {"indices": results, "splits": split_results, "dataset": {"path": str(folder), "variant": variant, "indices": len(defs),
                                            "queries": len(queries), "entity": entity}}


def format_table(results: dict) -> str:
    section = "tools" if "tools" in results else "indices"
    systems = results[section]
    columns = [c for c in next(iter(systems.values())) if c != "queries"]
    lines = ["system".ljust(12) + "".join(c.rjust(15) for c in columns)]
    for name, row in systems.items():
        lines.append(name.ljust(12) + "".join(str(row.get(c, "")).rjust(15) for c in columns))
    for name, halves in results.get("splits", {}).items():
        for part, row in halves.items():
            lines.append(f"{name} [{part}, {row['queries']} queries]".ljust(12) + " "
                         + ", ".join(f"{c} {row[c]}" for c in row if c != "queries"))
    for name, row in results.get("two_task", {}).items():
        lines.append(f"{name} [two-task, {row['queries']} requests] "
                     + ", ".join(f"{c} {row[c]}" for c in row if c != "queries" and not c.endswith("_ms")))
    for name, groups in results.get("by_category", {}).items():
        for group, row in groups.items():
            lines.append(f"{name} [{group}, {row['queries']} queries] "
                         + ", ".join(f"{c} {row[c]}" for c in row if c != "queries"))
    if "feedback" in results:
        lines.append("feedback: " + json.dumps(results["feedback"]))
    return "\n".join(lines)


def run(kind: str, folder: Path, endpoints: Endpoints, *, variant: str = "databases", k: int = 5,
        progress: Callable[[str], None] = print) -> dict:
    if kind == "tools":
        return asyncio.run(evaluate_tools(folder, endpoints, k=k, progress=progress))
    return asyncio.run(evaluate_indices(folder, endpoints, variant=variant, progress=progress))
