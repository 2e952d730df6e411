"""Query batches packed into one token row: the same vectors, without the padding.

The query batcher (query_batch.py) embeds every query waiting in one model call. Padded to the longest
of them, eight MS MARCO queries are ~100 token rows for ~71 real ones, and the model's cost is its rows
(compute-bound: every MatMul runs over every row, padding included). Here a call's queries run end to end
as one sequence instead:

- each query's tokens attend only to each other: every fused ``Attention`` op takes a block-diagonal
  mask (a 3-D ``mask_index``, 1 where a token may attend) instead of the padded graph's lengths;
- each query counts its positions from 0: ``position_ids`` go into ``EmbedLayerNormalization``;
- each query's vector is the mean of its own token vectors, L2-normalized (what the padded graph's
  pooling does over its mask), computed here from the graph's ``token_embeddings``.

So a query meets exactly the arithmetic it meets alone (vectors within ~1e-7 of the padded graph's); only
the masked attention scores between queries are computed and dropped, which grows with the square of the
packed length: runs hold at most PACK_MAX_TOKENS tokens (at 128, ~5% of a run is such scores).
Measured on the model alone (results/throughput, twentieth session): 2.6-3.4 ms of CPU per query in packed
batches of eight against 3.3-4.9 padded.

The graph is made from the fused export once per machine (a few seconds), atomically, into the same cache
folder as the export, keyed by the export and ONNX Runtime's version. Every load packs the probe texts into
one run and checks each one's vector against its own padded run: a graph whose vectors differ by more than
MAX_DIFFERENCE is refused, and query batches stay padded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindingError
from .onnx_query import MAX_DIFFERENCE, PROBES, TOKENS, WIDE_THREADS, _session, derived_graph

log = logging.getLogger(__name__)

VARIANT = "packed-block-diagonal"
PACK_MAX_TOKENS = 128       # tokens per packed run (a longer query runs alone)
INPUTS = ("input_ids", "token_type_ids", "position_ids", "packed_mask")
ATTENTIONS = 6              # the fused export's Attention ops (one per layer), each rewired to the packed mask


def packs(lengths: list[int], max_tokens: int = PACK_MAX_TOKENS) -> list[list[int]]:
    """Indices in runs of consecutive texts holding at most ``max_tokens`` tokens (one longer text alone)."""
    runs: list[list[int]] = []
    tokens = 0
    for i, length in enumerate(lengths):
        if not runs or tokens + length > max_tokens:
            runs.append([])
            tokens = 0
        runs[-1].append(i)
        tokens += length
    return runs


def packed_feeds(ids: list[list[int]], types: list[list[int]]) -> dict[str, np.ndarray]:
    """One row of the texts' tokens end to end, their positions counted from 0 per text, and the mask that
    lets a token attend to its own text's tokens only."""
    lengths = [len(row) for row in ids]
    total = sum(lengths)
    mask = np.zeros((1, total, total), np.int32)
    positions = np.empty((1, total), np.int32)
    start = 0
    for length in lengths:
        mask[0, start:start + length, start:start + length] = 1
        positions[0, start:start + length] = np.arange(length, dtype=np.int32)
        start += length
    return {"input_ids": np.fromiter((t for row in ids for t in row), np.int64, total)[None, :],
            "token_type_ids": np.fromiter((t for row in types for t in row), np.int64, total)[None, :],
            "position_ids": positions, "packed_mask": mask}


def pooled(tokens: np.ndarray, lengths: list[int]) -> np.ndarray:
    """Each text's unit mean of its rows of ``tokens`` (texts end to end, in order): the graph's pooling."""
    starts = np.cumsum([0, *lengths[:-1]])
    means = np.add.reduceat(tokens, starts, axis=0) / np.asarray(lengths, np.float32)[:, None]
    return (means / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def _pack_graph(source: Path, scratch: Path) -> None:
    """The fused export with the packed inputs wired in and only the token vectors as output."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    embeds = [n for n in graph.node if n.op_type == "EmbedLayerNormalization"]
    attentions = [n for n in graph.node if n.op_type == "Attention"]
    if len(embeds) != 1 or len(attentions) != ATTENTIONS:
        raise BindingError(f"expected 1 EmbedLayerNormalization and {ATTENTIONS} Attention ops in {source}, "
                           f"found {len(embeds)} and {len(attentions)}")
    graph.input.append(helper.make_tensor_value_info("position_ids", TensorProto.INT32, [1, "tokens"]))
    graph.input.append(helper.make_tensor_value_info("packed_mask", TensorProto.INT32, [1, "tokens", "tokens"]))
    embed = embeds[0]
    # inputs: ids, segments, word/position/segment tables, gamma, beta, mask, position_ids; no mask
    # (its only use was the lengths the padded Attention ops took)
    inputs = [*embed.input[:7], "", "position_ids"]
    del embed.input[:]
    embed.input.extend(inputs)
    for attention in attentions:
        attention.input[3] = "packed_mask"
    kept = [output for output in graph.output if output.name == TOKENS]
    del graph.output[:]
    graph.output.extend(kept)
    full = scratch / "unpruned.onnx"
    onnx.save(model, str(full))
    # drops the pooling and the attention mask's casts, which nothing left reads
    onnx.utils.extract_model(str(full), str(scratch / "model.onnx"), list(INPUTS), [TOKENS])
    full.unlink()


class PackedQueries:
    """Query batches on the packed graph, on WIDE_THREADS intra-op threads (the batcher's one model call
    at a time is where concurrent searches queue: a call that ends sooner lets the next start sooner)."""

    def __init__(self, path: Path, tokenize: Any) -> None:
        self.path = path
        self._tokenize = tokenize   # the query encoder's (its own copy of the tokenizer, under its lock)
        self._session = _session(path, threads=WIDE_THREADS)

    def _tokens(self, ids: list, types: list) -> np.ndarray:
        """The token vectors of tokenized texts run as one packed row: (their tokens, 384)."""
        return self._session.run([TOKENS], packed_feeds(ids, types))[0][0]

    def run_one(self, ids: np.ndarray, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One tokenized text's pooled vector and token vectors: a run of one text is the padded graph's
        run, so a long text of a request (onnx_query.encode_request) needs no padded two-thread session."""
        tokens = self._tokens([ids], [types])
        return pooled(tokens, [len(ids)])[0], tokens

    def encode(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenize(texts)
        ids, types = encoded["input_ids"], encoded["token_type_ids"]
        lengths = [len(row) for row in ids]
        out: np.ndarray | None = None
        for run in packs(lengths):
            vectors = pooled(self._tokens([ids[i] for i in run], [types[i] for i in run]), [lengths[i] for i in run])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), np.float32)
            out[run] = vectors
        return out if out is not None else np.zeros((0, 0), np.float32)


def load(reference: Any) -> PackedQueries:
    """The packed graph for the fused export ``reference`` (an OnnxQueryEncoder) runs, made first if needed.

    Raises BindingError when it cannot be made (a plain, unfused export; an unexpected graph) or when the
    probe texts packed together get vectors further than MAX_DIFFERENCE from their own padded runs."""
    target = derived_graph(reference, VARIANT, "packing", _pack_graph)
    packed = PackedQueries(target / "model.onnx", reference._tokenize)
    texts = list(PROBES)
    difference = float(np.abs(packed.encode(texts) - np.concatenate([reference.encode([t]) for t in texts])).max())
    if not difference <= MAX_DIFFERENCE:
        raise BindingError(f"the packed query graph at {target} differs from the padded one by {difference:.1e} "
                           f"(allowed {MAX_DIFFERENCE:.0e}); delete the folder to make it again")
    log.info("query batches packed without padding (%s; largest difference to padded runs %.1e)", target,
             difference)
    return packed
