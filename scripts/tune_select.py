"""Leave-one-catalogue-out cross-validation of tool and index selection constants, in process.

    .venv/bin/python scripts/tune_select.py --tools ../shared/data/tools-bfcl --indices ../shared/data/indices-spider

Catalogues. Tools: tools-bfcl cut into one catalogue per BFCL category (simple_python, multiple, parallel,
parallel_multiple), each holding the tools its own requests need, so each has its own size, vocabulary and
near-duplicates; each catalogue also gets two-task requests made of two of its own one-tool requests joined
by a connector (selection_split.two_task_requests), the shape of the two-task requests of a
plugin catalogue. Indices: Spider's 166 databases and its 876 tables.

Rule. For every held-out catalogue, each constant's grid value is the one with the best objective averaged
over the *other* catalogues (ties: the earlier value in the grid); the held-out catalogue's figure is then
read at that value. The shipped value is the one the folds choose most often. Tools' objective: the mean
of all_needed@5 over the catalogue's own requests and over its two-task requests. Indices' objective:
top-1. Confidence: the smallest cut whose confident answers are >= 97% right on the other catalogues.

The selection code is the server's (tools.choose, indices.rank on catalogues built by their ``assemble``)
on the fp32 query graph; the server runs int8, so quote `edgeindex eval`'s figures, not these.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.evaluation.selection_split import two_task_requests
from edgeindex.search.service import prepare_query_embedding
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices, tools
from edgeindex.selection.aliases import assign
from edgeindex.selection.clauses import clause_spans
from edgeindex.selection.definitions import count_tokens, parse_tool

PAIRS_PER_CATALOGUE = 150
TOOL_GRID = {"COVER_LEAD": [1, 2], "DUP_COS": [0.8, 0.85, 0.9, 0.95, 1.01], "DUP_PENALTY": [1.0, 3.0],
             "CLAUSE_Z": [3.0, 4.0], "TASK_DEPTH": [1, 2]}
INDEX_GRID = {"COVER_WEIGHT": [0.0, 0.25, 0.5, 1.0]}
CONFIDENT_GRID = [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
PRECISION = 0.97


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _expected(q: dict) -> list[str]:
    return q["expected"] if isinstance(q["expected"], list) else [q["expected"]]


# -- tools -------------------------------------------------------------------------------------

def tool_catalogues(folder: Path, embedder) -> list[dict]:
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(_jsonl(folder / "tools.jsonl"))]
    by_name = {d.name: d for d in defs}
    vectors = dict(zip(by_name, embedder.encode_sync([d.embedded_text() for d in defs])))
    described = [d for d in defs if d.description]
    views = dict(zip([d.name for d in described], embedder.encode_sync([d.description for d in described])))
    queries = _jsonl(folder / "queries.jsonl")
    out = []
    for category in sorted({q["bfcl_category"] for q in queries}):
        own = [q for q in queries if q["bfcl_category"] == category]
        names = sorted({e for q in own for e in _expected(q)} & set(by_name))
        aliases = assign(names, {})
        pairs = two_task_requests(own, PAIRS_PER_CATALOGUE)
        rows = []
        for name in names:
            d = by_name[name]
            rows.append({"name": name, "alias": aliases[name], "description": d.description,
                         "parameters": d.parameters, "category": d.category, "tags": list(d.tags),
                         "requires": list(d.requires), "tokens": count_tokens({**d.function(), "name": aliases[name]}),
                         "used": 0, "shown": 0, "embedding": vectors[name], "description_embedding": views.get(name)})
        out.append({"name": category, "rows": rows, "queries": own, "pairs": pairs})
    return out


def embed_requests(embedder, requests: list[dict]) -> None:
    async def run() -> None:
        for q in requests:
            parts = tools.segments(q["query"])
            parts = parts if len(parts) >= 2 else []
            clauses = clause_spans(q["query"], tools.CLAUSE_MIN_TERMS)
            vectors, clause_vectors = await tools.embed_texts(embedder, [q["query"], *parts], clauses)
            q["_v"] = (vectors, parts, [q["query"][a:b] for (a, b), v in zip(clauses, clause_vectors) if v is not None],
                       [v for v in clause_vectors if v is not None])
    asyncio.run(run())


def run_tools(cat, requests: list[dict], k: int = 5) -> dict:
    all5, recall5, sent = [], [], []
    for q in requests:
        vectors, parts, clause_texts, clause_vectors = q["_v"]
        request = tools.SelectRequest(q["query"], None, k, tools.DEFAULT_THRESHOLD, True, True, True)
        choice = tools.choose(cat, request, vectors[0], parts, list(vectors[1:]), clause_texts, clause_vectors)
        names = [cat.rows[i]["name"] for i in choice.chosen][:k]
        expected = _expected(q)
        all5.append(float(all(e in names for e in expected)))
        recall5.append(sum(e in names for e in expected) / len(expected))
        sent.append(len(choice.chosen))
    return {"all_needed@5": float(np.mean(all5)), "recall@5": float(np.mean(recall5)), "mean_sent": float(np.mean(sent))}


def _logistic(x: np.ndarray, y: np.ndarray, steps: int = 50) -> tuple[float, float]:
    """(a, b) of p = sigmoid(a x + b) by Newton's method on the log loss (a tiny ridge keeps it finite)."""
    w = np.zeros(2)
    design = np.column_stack([x, np.ones_like(x)])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-design @ w))
        grad = design.T @ (p - y) + 1e-3 * w
        hess = (design * (p * (1 - p))[:, None]).T @ design + 1e-3 * np.eye(2)
        w -= np.linalg.solve(hess, grad)
    return float(w[0]), float(w[1])


def _calibration(x: np.ndarray, y: np.ndarray, a: float, b: float) -> dict:
    p = 1 / (1 + np.exp(-(a * x + b)))
    bins = np.minimum((p * 10).astype(int), 9)
    ece = sum(abs(p[bins == i].mean() - y[bins == i].mean()) * (bins == i).mean() for i in range(10) if (bins == i).any())
    return {"brier": round(float(np.mean((p - y) ** 2)), 4), "ece": round(float(ece), 4)}


def calibrate_tools(catalogues: list[dict], built: dict) -> dict:
    """A tool's probability of being needed from its fused z (the top 10 of each of a catalogue's own
    requests): fitted on the other catalogues, its calibration read on the held-out one."""
    data = {}
    for c in catalogues:
        cat = built[c["name"]]
        xs, ys = [], []
        for q in c["queries"]:
            vectors = q["_v"][0]
            fused = cat.catalogue.score(q["query"], vectors[0]).fused
            for i in np.argsort(-fused, kind="stable")[:10]:
                xs.append(float(fused[i]))
                ys.append(float(cat.rows[i]["name"] in _expected(q)))
        data[c["name"]] = (np.asarray(xs), np.asarray(ys))
    folds = {}
    for held in data:
        x = np.concatenate([data[n][0] for n in data if n != held])
        y = np.concatenate([data[n][1] for n in data if n != held])
        a, b = _logistic(x, y)
        folds[held] = {"a": round(a, 4), "b": round(b, 4), "held_out": _calibration(*data[held], a, b)}
    a, b = _logistic(np.concatenate([d[0] for d in data.values()]), np.concatenate([d[1] for d in data.values()]))
    return {"folds": folds, "shipped": {"CALIBRATION_A": round(a, 4), "CALIBRATION_B": round(b, 4)}}


def tune_tools(catalogues: list[dict]) -> dict:
    built = {c["name"]: tools.assemble([("e", [dict(r) for r in c["rows"]], [])]) for c in catalogues}
    keys = list(TOOL_GRID)
    table: dict[tuple, dict[str, dict]] = {}
    for values in itertools.product(*TOOL_GRID.values()):
        for key, value in zip(keys, values):
            setattr(tools, key, value)
        table[values] = {c["name"]: {"own": run_tools(built[c["name"]], c["queries"]),
                                     "two_task": run_tools(built[c["name"]], c["pairs"])} for c in catalogues}
        print("tools", dict(zip(keys, values)), {n: (round(r["own"]["all_needed@5"], 4), round(r["two_task"]["all_needed@5"], 4))
                                                 for n, r in table[values].items()}, flush=True)

    def objective(values: tuple, names: list[str]) -> float:
        return float(np.mean([(table[values][n]["own"]["all_needed@5"] + table[values][n]["two_task"]["all_needed@5"]) / 2
                              for n in names]))

    folds = {}
    for held in catalogues:
        others = [c["name"] for c in catalogues if c is not held]
        best = max(table, key=lambda v: (objective(v, others), -list(table).index(v)))
        folds[held["name"]] = {"chosen": dict(zip(keys, best)), "held_out": table[best][held["name"]]}
    shipped = Counter(tuple(f["chosen"].values()) for f in folds.values()).most_common(1)[0][0]
    for key, value in zip(keys, shipped):
        setattr(tools, key, value)
    return {"grid": TOOL_GRID, "folds": folds, "shipped": dict(zip(keys, shipped)),
            "shipped_figures": table[shipped], "calibration": calibrate_tools(catalogues, built)}


# -- indices -----------------------------------------------------------------------------------

def index_catalogue(path: Path, embedder):
    defs = [indices.parse_index(r, f"{path.name}[{i}]") for i, r in enumerate(_jsonl(path))]
    vectors = embedder.encode_sync([d.embedded_text() for d in defs])
    part_rows = [(d.name, part, fields) for d in defs for part, fields in indices.parts(d).items()]
    part_vectors = embedder.encode_sync([indices.part_text(p, f) for _, p, f in part_rows]) if part_rows else []
    plans = [[f.text for f in indices.field_plan(d)] for d in defs]
    flat = embedder.encode_sync([t for plan in plans for t in plan])
    bounds = np.cumsum([0] + [len(plan) for plan in plans])
    rows = [{"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields), "profile": {},
             "embedding": v, "field_vectors": fv.pack(flat[bounds[n]:bounds[n + 1]]) if plans[n] else None}
            for n, (d, v) in enumerate(zip(defs, vectors))]
    parts = [{"index_name": name, "part": part, "fields": fields, "embedding": v}
             for (name, part, fields), v in zip(part_rows, part_vectors)]
    return indices.assemble([("e", rows, parts)])


def run_indices(cat, queries: list[dict], cover_weight: float) -> list[tuple[bool, float, float]]:
    """Per question: top-1 right, the first choice's z and its margin."""
    out = []
    for q in queries:
        ranked = indices.rank(cat, q["query"], q["_q"], cover_weight=cover_weight)
        order = [int(i) for i in np.argsort(-ranked.final, kind="stable")[:10]]
        top = float(ranked.final[order[0]])
        margin = top - float(ranked.final[order[1]])
        out.append((cat.rows[order[0]]["name"] in _expected(q), top, margin))
    return out


def tune_indices(catalogues: dict[str, tuple]) -> dict:
    table = {w: {name: run_indices(cat, qs, w) for name, (cat, qs) in catalogues.items()}
             for w in INDEX_GRID["COVER_WEIGHT"]}
    top1 = {w: {name: float(np.mean([r[0] for r in rows])) for name, rows in per.items()} for w, per in table.items()}
    print("indices top1", top1, flush=True)
    folds = {}
    for held in catalogues:
        others = [n for n in catalogues if n != held]
        weight = max(table, key=lambda w: (np.mean([top1[w][n] for n in others]), -list(table).index(w)))

        def precision(rows, cut, n):
            confident = [r for r in rows if r[1] >= indices.z_cut(cut, n) and r[2] >= indices.z_cut(indices.CONFIDENT_MARGIN, n, 0.25)]
            return (float(np.mean([r[0] for r in confident])) if confident else 1.0), len(confident) / len(rows)

        cut = next((c for c in CONFIDENT_GRID
                    if all(precision(table[weight][n], c, catalogues[n][0].catalogue.size)[0] >= PRECISION
                           for n in others)), CONFIDENT_GRID[-1])
        right, share = precision(table[weight][held], cut, catalogues[held][0].catalogue.size)
        folds[held] = {"chosen": {"COVER_WEIGHT": weight, "CONFIDENT_Z": cut},
                       "held_out": {"top1": top1[weight][held], "confident_right": right, "confident_share": share}}
    return {"grid": {**INDEX_GRID, "CONFIDENT_Z": CONFIDENT_GRID}, "top1": {str(w): v for w, v in top1.items()},
            "folds": folds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=Path)
    parser.add_argument("--indices", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    embedder = local_embedder()
    prepare_query_embedding(embedder)
    report: dict = {}
    if args.tools:
        catalogues = tool_catalogues(args.tools, embedder)
        embed_requests(embedder, [q for c in catalogues for q in c["queries"] + c["pairs"]])
        report["tools"] = tune_tools(catalogues)
        print(json.dumps(report["tools"]["folds"], indent=1), flush=True)
    if args.indices:
        catalogues = {}
        for name, index_file, query_file in (("spider-databases", "indices.jsonl", "queries.jsonl"),
                                             ("spider-tables", "indices_tables.jsonl", "queries_tables.jsonl")):
            queries = _jsonl(args.indices / query_file)
            for q in queries:
                q["_q"] = embedder.encode_query_sync(q["query"])
            catalogues[name] = (index_catalogue(args.indices / index_file, embedder), queries)
        report["indices"] = tune_indices(catalogues)
        print(json.dumps(report["indices"], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
