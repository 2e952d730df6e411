"""scripts/tune_select.py's in-process harness (the real select code) with the catalogue's vectors in fp32 (torch,
memoised, as registered) and the QUERY side's texts from the per-channel int8 graph (quantize.py) where a variant
says so. Every query-side text is embedded alone (its own call: dynamic quantization scales activations per call,
padding rows included, so a text alone is the only deterministic choice), memoised per (graph, text); clause
vectors are pooled from the request's own token rows of the graph the request went to.

Variants (--variant):
  fp32        every text fp32 (the control: must reproduce main's tune figures)
  all         every text of a select int8
  rows:N      every text of a select whose call (request + sentences, select's length buckets) has N+ padded rows
  sentences   the sentences scored alone int8; the request (and its clauses) fp32

Only the tuning half is printed unless --held-out is given (read once, at the end).

    .venv/bin/python results/selection/selectlat14/tune_q8.py INT8.onnx --variant all [--variant rows:30 ...] [--held-out]
"""
from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import tune_select  # noqa: E402

from edgeindex.bindings import onnx_query as oq  # noqa: E402
from edgeindex.bindings.span_pooling import span_vectors  # noqa: E402

QCACHE = Path("/tmp/selectlat14/tune-q8-queries.pkl")


class Q8Memo(tune_select.MemoEmbedder):
    def __init__(self, int8_path: Path) -> None:
        super().__init__()
        self.int8 = oq.OnnxQueryEncoder(self.inner._model, int8_path)
        self.int8_name = int8_path.stem   # the memo is per graph file
        self.solo: dict = pickle.loads(QCACHE.read_bytes()) if QCACHE.exists() else {}
        self.variant = "fp32"
        self.tok = self.inner._model.tokenizer

    def save(self) -> None:
        super().save()
        QCACHE.write_bytes(pickle.dumps(self.solo))

    def _alone(self, graph: str, text: str):
        key = (self.int8_name if graph == "int8" else graph, text)
        if key not in self.solo:
            enc = self.int8 if graph == "int8" else self.inner._queries
            pooled, tokens, offsets = enc.encode_tokens(text)
            self.solo[key] = (pooled.astype(np.float32), tokens.astype(np.float32), offsets)
        return self.solo[key]

    def _rows(self, texts: list[str]) -> int:
        lens = [len(self.tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
        return oq.padded_rows(lens, oq.length_buckets(lens))

    def _graphs(self, texts: list[str]) -> list[str]:
        v = self.variant
        if v == "fp32":
            return ["fp32"] * len(texts)
        if v == "all":
            return ["int8"] * len(texts)
        if v.startswith("rows:"):
            return ["int8" if self._rows(texts) >= int(v.split(":")[1]) else "fp32"] * len(texts)
        if v == "sentences":
            return ["fp32"] + ["int8"] * (len(texts) - 1)
        raise SystemExit(f"unknown variant {v}")

    async def embed_query(self, text: str) -> np.ndarray:
        return self._alone(self._graphs([text])[0], text)[0]

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._alone(g, t)[0] for g, t in zip(self._graphs(texts), texts)])

    async def embed_request_spans(self, texts: list[str], spans: list[tuple[int, int]]):
        graphs = self._graphs(texts)
        _, tokens, offsets = self._alone(graphs[0], texts[0])
        return (np.vstack([self._alone(g, t)[0] for g, t in zip(graphs, texts)]),
                span_vectors(tokens, offsets, spans))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("int8", type=Path)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--held-out", action="store_true")
    parser.add_argument("--tools", type=Path, default=Path("/work/shared/data/tools-bfcl"))
    parser.add_argument("--indices", type=Path, help="Spider's folder: index select (databases, then tables) "
                        "instead of tools")
    args = parser.parse_args()
    if not args.held_out:
        real = tune_select.report

        def tune_only(rows, ids, keys):
            from edgeindex.evaluation.selection_split import split_of
            chosen = [r for r, i in zip(rows, ids) if split_of(i) == "tune"]
            print("  tune     ", tune_select._summary(chosen, keys))

        tune_select.report = tune_only
    tune_select.CACHE = Path("/tmp/selectlat14/tune-docs.pkl")
    emb = Q8Memo(args.int8)
    for v in args.variant or ["fp32"]:
        emb.variant = v
        print(f"variant {v}", flush=True)
        if args.indices:
            for tables in (False, True):
                print("  indices, " + ("tables" if tables else "databases"))
                asyncio.run(tune_select.run_indices(args.indices, emb, tables))
        else:
            asyncio.run(tune_select.run_tools(args.tools, emb, False))
        emb.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
