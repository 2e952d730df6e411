"""Offline tuning harness for tool and index selection (no stack, no HTTP).

Runs the real ``selection.tools.select`` / ``selection.indices.select`` code over an
in-memory catalogue (a stand-in database answering the catalogue queries) with the real
local model; vectors are memoised in a cache file so a sweep re-embeds nothing. Reports
each metric on a fixed split of the queries (``tune`` = even hash, ``held_out`` = odd) and
on all, so a change is tuned on one half and checked on the other. The numbers to quote
come from ``edgeindex eval`` (real routes); this is for fast iteration only.

    .venv/bin/python scripts/tune_select.py --tools ../shared/data/tools-bfcl
    .venv/bin/python scripts/tune_select.py --indices ../shared/data/indices-spider [--tables]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from edgeindex.evaluation.selection_split import split_of
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices as ix
from edgeindex.selection import tools as tl
from edgeindex.selection.definitions import count_tokens, parse_tool

CACHE = Path("/tmp/tune-select-vectors.pkl")  # per query graph: tune-select-vectors-{query_vectors}.pkl


class MemoEmbedder:
    def __init__(self) -> None:
        from edgeindex.bindings.ai import local_embedder
        from edgeindex.search.service import prepare_query_embedding

        self.inner = local_embedder()
        prepare_query_embedding(self.inner)
        self.model_id = self.inner.model_id
        self.docs: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}
        # queries embedded on fp32 and on 8-bit weights (EDGEINDEX_QUERY_WEIGHTS) are memoised apart
        self.cache = CACHE.with_name(f"{CACHE.stem}-{self.inner.query_vectors}{CACHE.suffix}")
        if self.cache.exists():
            self.docs, self.queries = pickle.loads(self.cache.read_bytes())
        self.dirty = False

    def save(self) -> None:
        if self.dirty:
            self.cache.write_bytes(pickle.dumps((self.docs, self.queries)))

    async def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.docs]
        if missing:
            self.dirty = True
            for t, v in zip(missing, self.inner.encode_sync(missing)):
                self.docs[t] = v
        return np.vstack([self.docs[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        if text not in self.queries:
            self.dirty = True
            self.queries[text] = self.inner.encode_query_sync(text)
        return self.queries[text]

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.vstack([await self.embed_query(t) for t in texts])

    async def embed_request_spans(self, texts: list[str], spans: list[tuple[int, int]]):
        """As the select's encoder: clause vectors pooled from the request's token vectors (memoised per
        request, so a sweep of the clause cut or the clause splitter runs the model once)."""
        from edgeindex.bindings.span_pooling import span_vectors

        key = "\0tokens\0" + texts[0]
        if key not in self.queries:
            self.dirty = True
            _, tokens, offsets = self.inner._queries.encode_tokens(texts[0])
            self.queries[key] = (tokens.astype(np.float32), offsets)
        tokens, offsets = self.queries[key]
        return await self.embed_queries(texts), span_vectors(tokens, offsets, spans)


class FakeDB:
    """Answers the catalogue statements by their text."""

    def __init__(self, answers: dict[str, list[dict]]) -> None:
        self.answers = {tl.SQL[name]: rows for name, rows in answers.items()}

    async def fetch(self, sql: str, params: dict) -> list[dict]:
        if sql == tl.SQL["catalog_versions"]:
            return [{"entity_id": e, "version": 1} for e in params["entity_ids"]]
        if sql == tl.SQL["catalog_versions_of"]:
            return [{"entity_id": e, "kind": k, "version": 1} for e in params["entity_ids"] for k in params["kinds"]]
        return [dict(r) for r in self.answers.get(sql, [])]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _summary(rows: list[dict], keys: list[str]) -> dict:
    return {k: round(float(np.mean([r[k] for r in rows])), 4) for k in keys} | {"n": len(rows)}


def report(rows: list[dict], ids: list, keys: list[str]) -> None:
    for part in ("tune", "held_out", "all"):
        chosen = [r for r, i in zip(rows, ids) if part == "all" or split_of(i) == part]
        print(f"  {part:9s}", _summary(chosen, keys))


async def run_tools(folder: Path, emb: MemoEmbedder, feedback: bool) -> None:
    raw = _jsonl(folder / "tools.jsonl")
    queries = _jsonl(folder / "queries.jsonl")
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    described = [d.description or d.name for d in defs]
    dvecs = await emb.embed(described)
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    examples: list[dict] = []
    db = FakeDB({"tool_catalog": rows, "tool_example_vectors": examples})
    tl._cache.clear()
    out = []
    for q in queries:
        expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
        request = tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True)
        answer = await tl.select(db, emb, ["e"], request)
        names = [t["name"] for t in answer["tools"]]
        out.append({"recall@5": sum(e in names[:5] for e in expected) / len(expected),
                    "all_needed@5": float(all(e in names[:5] for e in expected)),
                    "sent": len(names), "reduction": answer["tokens"]["reduction"]})
    report(out, [q["id"] for q in queries], ["recall@5", "all_needed@5", "sent", "reduction"])
    emb.save()


async def _field_vectors(emb: MemoEmbedder, d) -> bytes | None:
    texts = [f.text for f in ix.field_plan(d)]
    return fv.pack(await emb.embed(texts)) if texts else None


async def run_indices(folder: Path, emb: MemoEmbedder, tables: bool) -> None:
    raw = _jsonl(folder / ("indices_tables.jsonl" if tables else "indices.jsonl"))
    queries = _jsonl(folder / ("queries_tables.jsonl" if tables else "queries.jsonl"))
    defs = [ix.parse_index(r, f"i[{i}]") for i, r in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    rows = [{"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields),
             "profile": {}, "embedding": v, "field_vectors": await _field_vectors(emb, d)} for d, v in zip(defs, vecs)]
    part_rows = [(d.name, p, f) for d in defs for p, f in ix.parts(d).items()]
    pvecs = await emb.embed([ix.part_text(p, f) for _, p, f in part_rows]) if part_rows else []
    parts = [{"index_name": n, "part": p, "fields": f, "embedding": v} for (n, p, f), v in zip(part_rows, pvecs)]
    db = FakeDB({"index_catalog": rows, "index_part_catalog": parts})
    ix._cache.clear()
    out = []
    for q in queries:
        expected = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
        answer = await ix.select(db, emb, ["e"], ix.SelectRequest(q["query"], None, 10))
        ranked = [i["name"] for i in answer["indices"]]
        first = next((i for i, r in enumerate(ranked) if r in expected), None)
        out.append({"top1": float(first == 0), "top3": float(first is not None and first < 3),
                    "mrr": 1 / (first + 1) if first is not None else 0.0,
                    "all_needed@5": float(all(e in ranked[:5] for e in expected))})
    report(out, [q["id"] for q in queries], ["top1", "top3", "mrr", "all_needed@5"])
    emb.save()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=Path)
    parser.add_argument("--indices", type=Path)
    parser.add_argument("--tables", action="store_true")
    parser.add_argument("--feedback", action="store_true")
    args = parser.parse_args()
    emb = MemoEmbedder()
    if args.tools:
        print("tools")
        asyncio.run(run_tools(args.tools, emb, args.feedback))
    if args.indices:
        print("indices, " + ("tables" if args.tables else "databases"))
        asyncio.run(run_indices(args.indices, emb, args.tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
