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
On the model alone: 2.6-3.4 ms of CPU per query in packed batches of eight against 3.3-4.9 padded.

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


def aligned(length: int, align: int) -> int:
    """A text's rows with the gap rows after it: ``length`` rounded up to a multiple of ``align``."""
    return -(-length // align) * align


def starts(lengths: list[int], align: int = 1) -> tuple[list[int], int]:
    """Where each text's rows start in a packed run, every start a multiple of ``align``, and the run's
    row count. ``align`` > 1 leaves gap rows between texts (packed_feeds fills them; pooling skips them):
    the 8-bit graph's MatMuls compute a row with arithmetic that depends on its index modulo 4
    (query_weights.py), so a text that always starts at a multiple of 4 gets the vector it gets alone."""
    out: list[int] = []
    row = 0
    for length in lengths:
        out.append(row)
        row += aligned(length, align)
    return out, (out[-1] + lengths[-1]) if lengths else 0


def packed_feeds(ids: list[list[int]], types: list[list[int]], align: int = 1) -> dict[str, np.ndarray]:
    """One row of the texts' tokens end to end, their positions counted from 0 per text, and the mask that
    lets a token attend to its own text's tokens only. A gap row (``align``) is a pad token at position 0
    that attends to itself alone, and no text's token attends to it."""
    lengths = [len(row) for row in ids]
    begins, total = starts(lengths, align)
    mask = np.zeros((1, total, total), np.int32)
    np.fill_diagonal(mask[0], 1)   # gap rows attend to themselves (a text's own block covers its rows)
    positions = np.zeros((1, total), np.int32)
    input_ids = np.zeros((1, total), np.int64)    # gap rows: token 0, [PAD] in the model's vocabulary
    token_types = np.zeros((1, total), np.int64)
    for start, length, row_ids, row_types in zip(begins, lengths, ids, types):
        mask[0, start:start + length, start:start + length] = 1
        positions[0, start:start + length] = np.arange(length, dtype=np.int32)
        input_ids[0, start:start + length] = row_ids
        token_types[0, start:start + length] = row_types
    return {"input_ids": input_ids, "token_type_ids": token_types, "position_ids": positions,
            "packed_mask": mask}


def pooled(tokens: np.ndarray, lengths: list[int], align: int = 1) -> np.ndarray:
    """Each text's unit mean of its rows of ``tokens`` (texts end to end, in order, each starting at a
    multiple of ``align``): the graph's pooling."""
    begins, _ = starts(lengths, align)
    # one reduceat over (begin, end) pairs: the even sums are the texts' rows, the odd ones the gaps between
    # them (dropped); the last text ends the run, so its sum runs to the end
    bounds = [i for start, length in zip(begins, lengths) for i in (start, start + length)][:-1]
    sums = np.add.reduceat(tokens, bounds, axis=0)[0::2]
    means = sums / np.asarray(lengths, np.float32)[:, None]
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
    at a time is where concurrent searches queue: a call that ends sooner lets the next start sooner).
    ``align``: each text's rows start at a multiple of it (``starts``)."""

    def __init__(self, path: Path, tokenize: Any, *, align: int = 1) -> None:
        self.path = path
        self.align = align
        self._tokenize = tokenize   # the query encoder's (its own copy of the tokenizer, under its lock)
        self._session = _session(path, threads=WIDE_THREADS)

    def _tokens(self, ids: list, types: list) -> np.ndarray:
        """The token vectors of tokenized texts run as one packed row: (its rows, 384)."""
        return self._session.run([TOKENS], packed_feeds(ids, types, self.align))[0][0]

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
        # a run's bound counts its gap rows too
        for run in packs([aligned(length, self.align) for length in lengths]):
            tokens = self._tokens([ids[i] for i in run], [types[i] for i in run])
            vectors = pooled(tokens, [lengths[i] for i in run], self.align)
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
