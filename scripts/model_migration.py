"""A live model migration (`edgeindex models migrate --to MODEL`) with agents searching throughout.

Starts a fresh local stack (embedded Postgres, moto, the upload and search workers) in a temp folder,
loads --chunks chunks of MS MARCO passage text with all-MiniLM-L6-v2's vectors (the serving model;
scripts/load_search.py's loader), and keeps --agents agents sending uncached searches (`"cache":
false`, the project's SDK, no retries) through two phases:

  quiet      nothing else runs, for --seconds
  migration  `edgeindex models migrate --to MODEL --duty D` in a process of its own; once it has
             stored --kill-at of the chunks' vectors it is killed with SIGKILL, and run again: the
             second run must embed exactly the chunks the first did not store. It then cuts over,
             and the phase ends --after seconds after the search worker answers with MODEL's
             query vectors (`switch_seconds`: from the migration's exit to that first answer)

Every answer of both phases is checked afterwards: it names the model of its query vector
(`model_id`), and each result's `scores.vector` must be the cosine of that model's query vector and
that model's vector of the chunk (within --tolerance), or 0 (a chunk of another model scores
nothing). An answer with a vector score that is neither mixes models. The query vectors are
embedded again here on the search worker's own query graphs; the chunks' vectors of both models are
read from the database once the migration is done (the replaced ones are kept for a rollback).

The run ends with one JSON line: {"benchmark": "model_migration", "chunks", "agents", "model", "duty",
"quiet": {"n", "p50_ms", "p99_ms", "errors"}, "migration": {... , "seconds", "switch_seconds"}, "p99_ratio", "errors",
"mixed_answers", "text_only_answers": {"quiet", "migration"}, "killed_at_vectors", "resumed_embedded", "re_embedded",
"cutover": {...}, "tools", "select_model_after"}. With --tools, a tool catalogue is registered first: the
cutover re-embeds it (`cutover.catalogues`, `catalogue_seconds`) and a tool selection after the switch
must answer with MODEL.

  .venv/bin/python scripts/model_migration.py                       # 5,000 chunks, 4 agents, duty 0.5
  .venv/bin/python scripts/model_migration.py --duty 1 --chunks 1000 --tools ../shared/data/tools-bfcl/tools.jsonl
"""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from argparse import ArgumentParser, RawDescriptionHelpFormatter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from load_search import DATA, ENTITY, ROOT, chunk_vectors, loaded_stack  # scripts/: on sys.path


@dataclass
class Answer:
    at: float                 # monotonic time the request was sent
    ms: float
    query: str
    model_id: str | None = None
    scores: list[tuple[str, float]] = field(default_factory=list)   # (chunk id, scores.vector)
    error: str | None = None


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _figures(answers: list[Answer]) -> dict:
    ms = [a.ms for a in answers if a.error is None]
    return {"n": len(answers), "p50_ms": round(statistics.median(ms), 2) if ms else None,
            "p99_ms": round(_p(ms, 0.99), 2), "errors": sum(a.error is not None for a in answers)}


class Agents:
    """``agents`` concurrent agents searching, in a thread of their own, until stopped."""

    def __init__(self, url: str, key: str, queries: list[str], agents: int) -> None:
        self.url, self.key, self.queries, self.agents = url, key, queries, agents
        self.answers: list[Answer] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Agents:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    async def _run(self) -> None:
        from edgeindex_client import APIError, AsyncClient, SearchRequest

        counter = iter(range(10**9))

        async def agent(client) -> None:
            while not self._stop.is_set():
                query = self.queries[next(counter) % len(self.queries)]
                sent = time.monotonic()
                started = time.perf_counter()
                try:
                    answer = await client.search_request(
                        SearchRequest(entity_ids=[ENTITY], query=query, k=10, cache=False))
                except (APIError, OSError) as error:
                    self.answers.append(Answer(sent, (time.perf_counter() - started) * 1000, query,
                                               error=str(error)[:200]))
                    continue
                self.answers.append(Answer(sent, (time.perf_counter() - started) * 1000, query, answer.model_id,
                                           [(r.chunk_id, r.scores.vector) for r in answer.results]))

        async with AsyncClient(self.key, search_url=self.url, upload_url=self.url, max_retries=0,
                               timeout=60) as client:
            await asyncio.gather(*(agent(client) for _ in range(self.agents)))


def _rows(dsn: str, sql: str, *params) -> list[dict]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def _stored(dsn: str, model_id: str) -> int:
    """The chunks with a vector of ``model_id`` for their current text."""
    return int(_rows(dsn, "SELECT count(*) AS n FROM chunk_vectors v JOIN chunks c ON c.entity_id = v.entity_id "
                          "AND c.id = v.chunk_id AND c.content_hash = v.content_hash WHERE v.model_id = %s",
                     model_id)[0]["n"])


def _serving(url: str) -> str | None:
    """The model the search worker embeds queries with (None when it did not answer in 30 s: the
    agents' latencies say how long it stalled)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=30) as answer:
            return json.loads(answer.read())["bindings"]["AI"]["model_id"]
    except TimeoutError:
        return None


def _post(url: str, key: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _register_tools(url: str, key: str, path: Path) -> int:
    """The catalogue registered for the benchmark's entity, 200 tools a request; how many."""
    tools = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    for start in range(0, len(tools), 200):
        status, answer = _post(f"{url}/entities/{ENTITY}/tools", key, {"tools": tools[start:start + 200]})
        if status != 200:
            raise SystemExit(f"registering the tools: {status} {answer}")
    print(f"registered {len(tools)} tools", flush=True)
    return len(tools)


def _select_model(url: str, key: str) -> str | None:
    """The model a tool selection answers with after the switch (None: it failed)."""
    status, answer = _post(f"{url}/tools/select", key, {"query": "what is the area of a triangle",
                                                       "entity_ids": [ENTITY]})
    if status != 200:
        print(f"tool selection after the switch: {status} {answer}", flush=True)
        return None
    return answer["model_id"]


def _migrate(dsn: str, model: str, duty: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgeindex.cli", "models", "migrate", "--to", model,
                             "--duty", str(duty), "--dsn", dsn, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _vectors(dsn: str, sql: str, *params) -> dict[str, np.ndarray]:
    return {r["id"]: np.asarray(json.loads(r["embedding"]), np.float32) for r in _rows(dsn, sql, *params)}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return max(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))), 0.0)


def check_answers(answers: list[Answer], query_vectors: dict[str, dict[str, np.ndarray]],
                  chunk_vectors_by_model: dict[str, dict[str, np.ndarray]], tolerance: float) -> dict:
    """Each answer: scored by its named model's vectors, by none (text only), or mixed.

    A result's vector score is its named model's when it is nearer that model's cosine than any other
    model's; an answer mixes models when a score is nearer another model's, or is farther than
    ``tolerance`` from every model's, or when some results are scored and others (with a cosine above
    ``tolerance``) are not."""
    kinds = {"vector": 0, "text_only": 0, "mixed": 0}
    worst = 0.0
    examples: list[dict] = []
    for a in answers:
        if a.error is not None or not a.scores:
            continue
        if a.model_id not in query_vectors:
            kinds["mixed"] += 1
            if len(examples) < 5:
                examples.append({"model_id": a.model_id, "unknown_model": True})
            continue
        scored = unscored = wrong = 0
        for chunk_id, score in a.scores:
            cosines = {m: _cosine(query_vectors[m][a.query], vectors[chunk_id])
                       for m, vectors in chunk_vectors_by_model.items()}
            own = abs(score - cosines[a.model_id])
            if score == 0.0:   # scored by no vector, or by one at (or below) a right angle
                unscored += cosines[a.model_id] > tolerance
            elif own <= tolerance and all(own <= abs(score - c) for c in cosines.values()):
                scored += 1
                worst = max(worst, own)
            else:
                wrong += 1
                if len(examples) < 5:
                    examples.append({"model_id": a.model_id, "chunk_id": chunk_id, "score": score,
                                     "cosines": {m: round(c, 5) for m, c in cosines.items()}})
        if wrong or (scored and unscored):
            kinds["mixed"] += 1
            if not wrong and len(examples) < 5:
                examples.append({"model_id": a.model_id, "query": a.query, "scores": [
                    (round(score, 5), round(_cosine(query_vectors[a.model_id][a.query],
                                                    chunk_vectors_by_model[a.model_id][c]), 5))
                    for c, score in a.scores]})
        elif unscored:
            kinds["text_only"] += 1
        else:
            kinds["vector"] += 1
    return {**kinds, "worst_deviation": round(worst, 5), "examples": examples}


def _query_vectors(model: str, queries: set[str]) -> tuple[str, dict[str, np.ndarray]]:
    """The queries embedded as the search worker embeds them (its query graphs)."""
    from edgeindex.bindings.ai import local_embedder, local_model

    embedder = local_embedder(64, local_model(model).name)
    embedder.prepare_queries()

    async def embed() -> dict[str, np.ndarray]:
        return {q: np.asarray(await embedder.embed_query(q), np.float32) for q in sorted(queries)}

    return embedder.model_id, asyncio.run(embed())


def main() -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=5_000)
    parser.add_argument("--agents", type=int, default=4, help="concurrent searching agents")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the quiet phase")
    parser.add_argument("--model", default="multilingual-e5-small", help="the model to migrate to")
    parser.add_argument("--duty", type=float, default=0.5, help="the backfill's duty (migrate --duty)")
    parser.add_argument("--kill-at", type=float, default=0.3, help="share of the chunks stored before kill -9")
    parser.add_argument("--after", type=float, default=10.0, help="seconds searched after the worker switched")
    parser.add_argument("--tolerance", type=float, default=0.01, help="a vector score's distance from its cosine")
    parser.add_argument("--tools", type=Path, default=None, metavar="JSONL",
                        help="a tool catalogue registered before the migration (tools-bfcl/tools.jsonl): the "
                             "cutover re-embeds it, and a selection after the switch must answer with the new model")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from edgeindex.bindings.ai import local_model

    target = local_model(args.model).model_id
    queries = [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]
    vectors = chunk_vectors(args.chunks, "real")
    with loaded_stack("edgeindex-migration-", args.chunks, vectors) as (stack, key):
        url = stack.url("search")
        served_before = _serving(url)
        registered = _register_tools(url, key, args.tools) if args.tools else 0
        with Agents(url, key, queries, args.agents) as agents:
            time.sleep(10)   # warm-up, not counted
            quiet_from = time.monotonic()
            time.sleep(args.seconds)
            migration_from = time.monotonic()
            first = _migrate(stack.dsn, args.model, args.duty)
            while _stored(stack.dsn, target) < args.kill_at * args.chunks:
                if first.poll() is not None:
                    raise SystemExit(f"the migration ended before the kill (exit {first.returncode})")
                time.sleep(0.5)
            first.send_signal(signal.SIGKILL)
            first.wait()
            killed_at = _stored(stack.dsn, target)
            print(f"killed the migration with {killed_at} of {args.chunks} vectors stored", flush=True)
            second = _migrate(stack.dsn, args.model, args.duty)
            out, _ = second.communicate()
            if second.returncode != 0:
                raise SystemExit(f"the resumed migration failed (exit {second.returncode})")
            result = json.loads(out.strip().splitlines()[-1])
            committed = time.monotonic()
            # switched: the search worker answers with the target's query vectors (its services swapped)
            while not any(a.model_id == target and a.at > committed for a in agents.answers[-50:]):
                time.sleep(0.1)
            switched = time.monotonic()
            time.sleep(args.after)
            migration_to = time.monotonic()
            selected = _select_model(url, key) if registered else None
        answers = agents.answers
        quiet = [a for a in answers if quiet_from <= a.at < migration_from]
        during = [a for a in answers if migration_from <= a.at < migration_to]
        by_model = {
            target: _vectors(stack.dsn, "SELECT id::text, embedding::text FROM chunks"),
            served_before: _vectors(stack.dsn, "SELECT chunk_id::text AS id, embedding::text FROM chunk_vectors "
                                           "WHERE model_id = %s", served_before)}
    asked = {a.query for a in quiet + during}
    query_vectors = dict(_query_vectors(name, asked) for name in ("all-MiniLM-L6-v2", args.model))
    checked = check_answers(quiet + during, query_vectors, by_model, args.tolerance)
    text_only = {"quiet": check_answers(quiet, query_vectors, by_model, args.tolerance)["text_only"]}
    text_only["migration"] = checked["text_only"] - text_only["quiet"]
    backfilled = result["backfill"]["embedded"]
    caught_up = result["cutover"]["embedded_before"] + result["cutover"]["embedded_during"]
    figures = {"quiet": _figures(quiet), "migration": {**_figures(during),
                                                       "seconds": round(migration_to - migration_from, 1),
                                                       "switch_seconds": round(switched - committed, 1),
                                                       "after_switch_seconds": round(migration_to - switched, 1)}}
    ratio = round(figures["migration"]["p99_ms"] / figures["quiet"]["p99_ms"], 3)
    line = {"benchmark": "model_migration", "chunks": args.chunks, "agents": args.agents, "model": target,
            "duty": args.duty, **figures, "p99_ratio": ratio,
            "errors": figures["quiet"]["errors"] + figures["migration"]["errors"],
            "mixed_answers": checked["mixed"], "text_only_answers": text_only,
            "vector_answers": checked["vector"], "worst_deviation": checked["worst_deviation"],
            "killed_at_vectors": killed_at, "resumed_embedded": backfilled + caught_up,
            "re_embedded": killed_at + backfilled + caught_up - args.chunks, "cutover": result["cutover"],
            "tools": registered, "select_model_after": selected}
    for example in checked.pop("examples"):
        print(f"not the named model's score: {example}", flush=True)
    print(f"quiet: {figures['quiet']}\nmigration: {figures['migration']}\np99 {ratio}x quiet; "
          f"{line['errors']} errors; answers: {checked}; resumed run embedded {line['resumed_embedded']} "
          f"after the kill at {killed_at} ({line['re_embedded']} embedded twice)", flush=True)
    print(json.dumps(line), flush=True)
    catalogue_ok = not registered or selected == target
    return 0 if line["errors"] == 0 and line["mixed_answers"] == 0 and line["re_embedded"] == 0 and catalogue_ok else 1


if __name__ == "__main__":
    sys.exit(main())
