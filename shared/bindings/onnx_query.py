"""Query embeddings through ONNX Runtime: the same weights, exported once, checked at load.

A search embeds one short query per request. sentence-transformers on torch spends most
of its ~8 ms (one thread) dispatching a hundred small operators from Python; the same
graph in ONNX Runtime takes ~3 ms and gives the same vector (largest difference ~2e-7).
Batches of passages (ingestion) stay on torch, which is the faster of the two there
(85 vs 68 passages/s on 2 cores).

The graph (transformer, mean pooling over the attention mask, L2 normalization) has two
outputs: the pooled unit vector, and the transformer's contextual token vectors before pooling
(``token_embeddings``). A plain query asks for the first only; tool selection asks for both for a
request it splits into clauses, and pools each clause's tokens (``span_pooling``) at no model time.
The token vectors are the hidden state the pooled vector is computed from anyway, so a graph with
them as an output does the same work for a query that does not fetch them. It is
exported from the packaged weights the first time a process asks for it: through torch's
TorchScript exporter with eager attention and fused by ONNX Runtime's BERT optimizer (one
Attention op per layer; ~6% less time per query than the unfused graph), else, when that
exporter or optimizer is unavailable or fails, with the dynamo exporter unfused (the log and
the folder's ``variant`` file say which). It goes into a cache folder shared by every worker
on the machine (``$EDGEINDEX_CACHE_DIR``, else ``$XDG_CACHE_HOME/edgeindex``, else
``~/.cache/edgeindex``), keyed by the weights file, the exporter's and optimizer's versions and the
variant: a failed fused export is retried at the next loads (a few), never cached as the fused one.
Every load re-embeds a few probe texts both ways: an export that does not reproduce the torch
vectors is refused, never used.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindingError, ModelMismatchError
from .span_pooling import span_vectors, unit_mean

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
TOKENS = "token_embeddings"   # (batch, seq, 384): the contextual token vectors the pooled one is the mean of
# Part of the cache key: a graph exported before it had the TOKENS output is exported again, not loaded.
GRAPH_OUTPUTS = f"{OUTPUT}+{TOKENS}"
MAX_DIFFERENCE = 1e-4  # per component, between the exported graph and torch on the probe texts
# A request's texts padded to WIDE_MIN_ROWS token rows or more take a second core (encode_request): below
# it a single query, where a second thread is no faster. Several texts go as two halves at once, one
# per single-thread session (a thread hand-off per call); one long text runs on WIDE_THREADS intra-op threads.
WIDE_MIN_ROWS = 40
WIDE_THREADS = 2
# A padded query batch (encode_queries) runs on the wide session: 0.57-0.78x the wall time for 1.04-1.36x
# the CPU per query in batches of 1-8, and the one model thread is where concurrent searches queue.
# Ingestion's batches (encode_batches): a batch's cost is its padded token rows plus a fixed cost per run,
# and per padded token it grows once a batch's activations outgrow the core's caches. On one ONNX Runtime
# thread, in calls of 40 MS MARCO passages, batches of 8 sorted by length cost 23.7-24.7 ms of CPU per
# passage, padded_batches' 21.1-21.3; ~190-token chunks
# cost 47-49 ms in batches of 8 (no padding at all) and 44 in batches of 2.
BATCH_RUN_TOKENS = 16      # the fixed cost of one run, in padded tokens
BATCH_MAX_TOKENS = 512     # padded tokens a batch may hold (a longer text runs alone)
# what ``_export`` wrote, in the cache folder's ``variant`` file and the load log
FUSED_VARIANT = "torchscript-eager+ort-bert-fusion"
PLAIN_VARIANT = "dynamo"
PROBES = ("how do we rotate the oncall schedule", "ZX-4471-QK certificate rotation failed",
          "Quarterly revenue grew 12% while operating costs fell; the board approved a buyback.")


def cache_root() -> Path:
    explicit = os.environ.get("EDGEINDEX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgeindex"


def _export_key(model_dir: Path, variant: str = FUSED_VARIANT) -> str:
    """Changes whenever the weights, the exporter or the fusing optimizer do; one key per variant."""
    import onnxruntime
    import torch

    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    raw = (f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{torch.__version__}:"
           f"{onnxruntime.__version__}:{variant}:{GRAPH_OUTPUTS}")
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _pooled(transformer: Any) -> Any:
    """The transformer with mean pooling over the attention mask and L2 normalization, as one module
    that also returns the token vectors it pooled."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=1), hidden

    return Pooled(transformer).eval()


def _export_fused(model: Any, scratch: Path) -> None:
    """TorchScript export with eager attention, then ONNX Runtime's BERT fusions.

    The fusions (one Attention op per layer, SkipLayerNormalization, BiasGelu) only recognise the
    eager attention pattern as the TorchScript exporter writes it: the dynamo export's SDPA graph
    fuses none of them. Fused, one query costs ~6% less at one thread (0.94 of the unfused mean in one
    process, 15% less in ORT's own profile) with the same vectors (2e-7). The exporter is deprecated
    in torch, hence the fallback in ``_cached_export``.
    """
    import copy

    import torch
    from onnxruntime.transformers.optimizer import optimize_model

    # a copy: the loaded model keeps serving torch batches (ingestion) with its own attention
    transformer = copy.deepcopy(model[0].auto_model)
    transformer.set_attn_implementation("eager")
    example = model.tokenizer([PROBES[0]], return_tensors="pt")
    plain = scratch / "plain.onnx"
    with torch.no_grad():
        torch.onnx.export(_pooled(transformer), tuple(example[name] for name in INPUTS), str(plain),
                          input_names=list(INPUTS), output_names=[OUTPUT, TOKENS], opset_version=17,
                          dynamic_axes={name: {0: "batch", 1: "seq"} for name in (*INPUTS, TOKENS)},
                          dynamo=False)
    config = transformer.config
    # opt_level 1: the portable fusions only; the session applies its own machine-specific ones at load
    fused = optimize_model(str(plain), model_type="bert", num_heads=int(config.num_attention_heads),
                           hidden_size=int(config.hidden_size), opt_level=1)
    counts = fused.get_fused_operator_statistics()
    if not counts.get("Attention"):
        raise BindingError(f"no attention was fused ({counts})")
    fused.save_model_to_file(str(scratch / "model.onnx"))
    plain.unlink()
    # A fusion that changed the vectors is not kept: the plain export takes its place (``_cached_export``),
    # rather than every worker refusing to start at the check in ``load``.
    difference = _largest_difference(model, scratch / "model.onnx")
    if difference > MAX_DIFFERENCE:
        raise BindingError(f"the fused graph differs from the model by {difference:.1e}")


def _largest_difference(model: Any, path: Path) -> float:
    """Largest per-component difference between the graph at ``path`` and torch, on the probe texts: its
    pooled output, and the unit mean of its token vectors (what clause vectors are pooled from)."""
    reference = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True)
    encoder = OnnxQueryEncoder(model, path)
    from_tokens = np.stack([unit_mean(encoder.encode_tokens(text)[1]) for text in PROBES])
    return float(max(np.abs(encoder.encode(list(PROBES)) - reference).max(), np.abs(from_tokens - reference).max()))


def _export_dynamo(model: Any, scratch: Path) -> None:
    import torch

    example = model.tokenizer([PROBES[0]], return_tensors="pt")
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=model.max_seq_length)
    with torch.no_grad():
        torch.onnx.export(_pooled(model[0].auto_model), tuple(example[name] for name in INPUTS),
                          str(scratch / "model.onnx"), input_names=list(INPUTS), output_names=[OUTPUT, TOKENS],
                          dynamic_shapes={name: {0: batch, 1: seq} for name in INPUTS}, dynamo=True)


# A fused export that failed is tried again at the next loads, this many times in all per key (the key
# changes with torch, ONNX Runtime and the weights): a passing failure (memory, a killed process) does not
# leave the slower graph for good, and a lasting one (an exporter or optimizer missing) costs a few loads.
FUSED_ATTEMPTS = 3


def _write(target: Path, variant: str, export: Callable[[Path], None]) -> None:
    """``export(scratch)`` writes ``model.onnx`` (+ any external weights); with ``variant`` it becomes
    ``target``, atomically (a half-written folder is never taken for an export)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        export(scratch)
        (scratch / "variant").write_text(variant + "\n")
        try:
            os.rename(scratch, target)
        except OSError:
            # Another process won the race: its folder is whole (renamed in one step with its variant
            # file, written last), so it is used, whatever files the export writes.
            if not (target / "variant").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def derived_graph(reference: OnnxQueryEncoder, variant: str, purpose: str,
                  make: Callable[[Path, Path], None]) -> Path:
    """The folder of a graph made from the fused export ``reference`` runs (``make(source, scratch)`` writes
    its ``model.onnx`` the first time, through ``_write``): beside the export, keyed by the export's folder,
    ``variant`` and ONNX Runtime's version (quantized_query, packed_query). Raises BindingError for any
    other export: the derived graphs rewrite the fused one's ops (``purpose`` names the caller's)."""
    import onnxruntime

    if reference.variant != FUSED_VARIANT:
        raise BindingError(f"the query encoder is the {reference.variant} export; {purpose} needs the fused one")
    source = Path(reference.path)
    target = source.parent.parent / f"{source.parent.name}-{variant}-ort{onnxruntime.__version__}"
    if not (target / "variant").is_file():
        log.info("making the query encoder's %s graph at %s (once per machine)", variant, target)
        _write(target, variant, lambda scratch: make(source, scratch))
    return target


def _failures_path(fused: Path) -> Path:
    return fused.with_name(fused.name + ".fused-failed")


def _fused_failures(fused: Path) -> int:
    try:
        return int(_failures_path(fused).read_text().split(None, 1)[0])
    except (OSError, ValueError, IndexError):
        return 0


def _cached_export(model: Any, fused: Path, plain: Path) -> Path:
    """The folder of the export to load: the fused one (``fused``, its own key), exported first if needed;
    while it fails (up to ``FUSED_ATTEMPTS`` loads), the plain dynamo export under its own key (``plain``):
    unfused, ~6% slower per query, same vectors. Only a fused graph is ever written under the fused key,
    so a failure there is never taken for the fused export at a later load."""
    if (fused / "model.onnx").is_file() and export_variant(fused) != FUSED_VARIANT:
        # written by a version of this module that put its fallback under the fused key: moved aside
        if (plain / "model.onnx").is_file():
            shutil.rmtree(fused, ignore_errors=True)
        else:
            os.replace(fused, plain)
    if (fused / "model.onnx").is_file():
        return fused
    failures = _fused_failures(fused)
    if failures < FUSED_ATTEMPTS:
        log.info("exporting the fused query encoder to %s (once per machine)", fused)
        try:
            _write(fused, FUSED_VARIANT, lambda scratch: _export_fused(model, scratch))
        except Exception as exc:  # an exporter or optimizer missing, renamed or refusing the graph
            failures += 1
            _failures_path(fused).write_text(f"{failures} {type(exc).__name__}: {exc}\n")
            log.warning("fused query encoder export failed (%s: %s; attempt %d of %d); using the plain "
                        "dynamo export", type(exc).__name__, exc, failures, FUSED_ATTEMPTS)
        else:
            _failures_path(fused).unlink(missing_ok=True)
            return fused
    if not (plain / "model.onnx").is_file():
        log.info("exporting the plain query encoder to %s (once per machine)", plain)
        _write(plain, PLAIN_VARIANT, lambda scratch: _export_dynamo(model, scratch))
    return plain


def export_variant(folder: Path) -> str:
    """Which export a cache folder holds (folders written before variants were recorded: plain)."""
    marker = folder / "variant"
    return marker.read_text().strip() if marker.is_file() else PLAIN_VARIANT


def length_buckets(lengths: list[int]) -> list[list[int]]:
    """Indices in at most two batches of similar lengths, cut where the padded rows are fewest."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if len(order) < 2:
        return [order] if order else []
    longest = lengths[order[-1]]
    best, cut = len(order) * longest, len(order)
    for c in range(1, len(order)):
        rows = c * lengths[order[c - 1]] + (len(order) - c) * longest
        if rows < best:
            best, cut = rows, c
    return [group for group in (order[:cut], order[cut:]) if group]


def padded_batches(lengths: list[int], max_rows: int, *, run_tokens: int = BATCH_RUN_TOKENS,
                   max_tokens: int = BATCH_MAX_TOKENS) -> list[list[int]]:
    """Indices sorted by length, cut into batches of consecutive lengths that cost least in all: each batch
    ``run_tokens`` plus its rows x its longest text, at most ``max_rows`` rows and ``max_tokens`` padded tokens
    (one text alone may exceed it). Exact (dynamic programming over the cut points), O(n x max_rows)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n, rows = len(order), max(1, max_rows)
    cost, start = [0] * (n + 1), [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[order[end - 1]]
        # the last text alone is always a batch; then longer batches ending with it, while they fit
        cost[end], start[end] = cost[end - 1] + run_tokens + longest, end - 1
        for first in range(end - 2, max(0, end - rows) - 1, -1):
            if (end - first) * longest > max_tokens:
                break  # more rows only pad more
            candidate = cost[first] + run_tokens + (end - first) * longest
            if candidate < cost[end]:
                cost[end], start[end] = candidate, first
    batches, end = [], n
    while end > 0:
        batches.append(order[start[end]:end])
        end = start[end]
    return batches[::-1]


def padded_rows(lengths: list[int], groups: list[list[int]]) -> int:
    return sum(len(group) * max(lengths[i] for i in group) for group in groups)


def halves(lengths: list[int]) -> list[list[int]]:
    """Indices in two sets of about equal tokens (longest first, each to the lighter set); one set for one text.

    A tool-selection request is the whole request and its sentences, whose tokens add up to about the
    request's: the request goes to one half, most sentences to the other."""
    sets: tuple[list[int], list[int]] = ([], [])
    tokens = [0, 0]
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        lighter = 0 if tokens[0] <= tokens[1] else 1
        sets[lighter].append(i)
        tokens[lighter] += lengths[i]
    return [sorted(half) for half in sets if half]


def _session(path: Path, *, threads: int) -> Any:
    """An ONNX Runtime session of the graph on ``threads`` intra-op threads that sleep between operators:
    on a busy 2-core box a spinning pool steals the core Postgres needs."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxQueryEncoder:
    """One text in, one unit vector out, on one ONNX Runtime thread.

    ``solo``: every text runs in a call of its own, never padded beside another (a dynamically quantized
    graph scales each call's activations over the whole batch, so a batch-mate would move a text's vector:
    quantized_query.py)."""

    def __init__(self, model: Any, path: Path, *, solo: bool = False) -> None:
        # one short text at a time: a second thread only adds hand-off cost
        self._session = _session(path, threads=1)
        # A copy of its own, used under a lock: a fast tokenizer keeps its padding and truncation
        # settings in the Rust tokenizer and sets them on every call, so two calls at once (a search's
        # padded batch on the query batcher's thread, a selection's unpadded request on another) could
        # each run with the other's setting: ragged rows (a 500) or pads read as tokens (wrong vectors,
        # silently). Tokenizing a request's texts takes well under a millisecond; the lock is never held
        # through a model run.
        self._tokenizer = copy.deepcopy(model.tokenizer)
        self._tokenizer_lock = threading.Lock()
        self._max_tokens = int(model.max_seq_length)
        self._pad_id = int(model.tokenizer.pad_token_id or 0)
        self.path = path
        self.variant = PLAIN_VARIANT
        self._wide: Any = None
        self._wide_lock = threading.Lock()
        self._second: Any = None      # (session, one-thread executor) for a request's other half
        self._batch_session: Any = self._session  # encode_batches' (batch_session gives it its own)
        self.solo = solo
        self.packed: Any = None  # query batches packed without padding (packed_query.py), once loaded
        self.queries_8bit: Any = None  # the same on 8-bit weights (query_weights.py), once loaded

    def _tokenize(self, texts: list[str], **options: Any) -> Any:
        """``texts`` tokenized and truncated to the model's length (see the lock's comment in __init__)."""
        with self._tokenizer_lock:
            return self._tokenizer(texts, truncation=True, max_length=self._max_tokens, **options)

    def encode(self, texts: list[str], *, session: Any = None) -> np.ndarray:
        if self.solo and len(texts) > 1:
            return np.concatenate([self.encode([text]) for text in texts])
        batch = self._tokenize(texts, return_tensors="np", padding=True)
        feeds = {name: batch[name].astype(np.int64) for name in INPUTS}
        return (session or self._session).run([OUTPUT], feeds)[0].astype(np.float32)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """``encode`` for the query batcher: on the 8-bit packed graph when it loaded (``self.queries_8bit``),
        else the packed fp32 graph (``self.packed``: a batch pads nothing), else padded on the wide session
        (two threads: concurrent searches queue for the batcher's one model call at a time, so a batch that
        ends sooner lets the next start sooner; the other core's spare time pays for the extra CPU)."""
        if self.queries_8bit is not None and not self.solo:
            return self.queries_8bit.encode(texts)
        if self.packed is not None and not self.solo:
            return self.packed.encode(texts)
        return self.encode(texts, session=None if self.solo else self.wide_session())

    def encode_request(self, texts: list[str]) -> np.ndarray:
        """Several texts of one request (tool selection: the request and its sentences), same vectors.

        The cost of a call is its padded token rows (texts x longest text): the model is compute-bound
        at ~0.3 ms per row on one core. Padding every sentence to the whole request's length spent about
        half of a multi-sentence request's rows on padding, so the texts go in at most two batches of
        similar lengths (the cut that pads least). A call of WIDE_MIN_ROWS rows or more is the long tail of
        selection latency and takes a second core: several texts are cut in two halves of about equal
        tokens (``halves``), run at once on two one-thread sessions, each half in its own length buckets;
        one long text runs on two intra-op threads. Two intra-op threads that sleep between operators are
        woken ~100 times a call, two halves hand off once: ~0.9x the mean and ~0.78x the p99 of the intra-op
        run on tools-bfcl's multi-sentence requests. Short
        single queries stay on one thread, where a second only adds hand-off cost.
        """
        return self._run_request(texts, None)[0]

    def encode_request_spans(self, texts: list[str], spans: list[tuple[int, int]]
                             ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """``encode_request``'s vectors, and one vector per character span of ``texts[0]`` pooled from the
        token vectors of the same forward pass (span_pooling.py): the parts cost no model time."""
        return self._run_request(texts, spans)

    def _run_request(self, texts: list[str], spans: list[tuple[int, int]] | None
                     ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        if not texts:
            return np.zeros((0, 0), np.float32), []
        encoded = self._tokenize(texts, return_offsets_mapping=spans is not None)
        ids = [np.asarray(row, dtype=np.int64) for row in encoded["input_ids"]]
        types = [np.asarray(row, dtype=np.int64) for row in encoded["token_type_ids"]]
        lengths = [len(row) for row in ids]
        if padded_rows(lengths, self._groups(lengths)) < WIDE_MIN_ROWS:
            done = self._run_groups(self._session, ids, types, list(range(len(ids))), spans is not None)
        elif len(texts) == 1 and self.packed is not None and not self.solo:
            vector, tokens = self.packed.run_one(ids[0], types[0])  # the same two threads, no session of its own
            done = [([0], vector[None, :], tokens if spans is not None else None)]
        elif len(texts) == 1:
            done = self._run_groups(self.wide_session(), ids, types, [0], spans is not None)
        else:
            first, other = halves(lengths)
            session, executor = self.second_session()
            later = executor.submit(self._run_groups, session, ids, types, other, spans is not None)
            done = self._run_groups(self._session, ids, types, first, spans is not None) + later.result()
        out = np.zeros((len(texts), done[0][1].shape[1]), np.float32)
        parts: list[np.ndarray | None] = []
        for group, vectors, tokens in done:
            out[group] = vectors
            if tokens is not None:
                parts = span_vectors(tokens, encoded["offset_mapping"][0], spans)
        return out, parts

    def _groups(self, lengths: list[int]) -> list[list[int]]:
        """The calls a request's texts go in: length buckets, or one text a call when ``solo``."""
        return [[i] for i in range(len(lengths))] if self.solo else length_buckets(lengths)

    def _padded_feeds(self, ids: list[np.ndarray], types: list[np.ndarray], group: list[int]) -> dict[str, np.ndarray]:
        """The model's inputs for texts ``group``, padded to the longest of them."""
        width = max(len(ids[i]) for i in group)
        feeds = {name: np.full((len(group), width), self._pad_id if name == "input_ids" else 0, np.int64)
                 for name in INPUTS}
        for row, i in enumerate(group):
            feeds["input_ids"][row, :len(ids[i])] = ids[i]
            feeds["token_type_ids"][row, :len(ids[i])] = types[i]
            feeds["attention_mask"][row, :len(ids[i])] = 1
        return feeds

    def _run_groups(self, session: Any, ids: list[np.ndarray], types: list[np.ndarray], which: list[int],
                    tokens_of_first: bool) -> list[tuple[list[int], np.ndarray, np.ndarray | None]]:
        """Texts ``which`` in their length buckets on ``session``: (indices, pooled vectors, the first text's
        token vectors when it is among them and ``tokens_of_first``, else None) per bucket."""
        done = []
        for local in self._groups([len(ids[i]) for i in which]):
            group = [which[j] for j in local]
            feeds = self._padded_feeds(ids, types, group)
            # the token vectors are fetched only for the batch that holds the first text, when asked
            first = tokens_of_first and 0 in group
            results = session.run([OUTPUT, TOKENS] if first else [OUTPUT], feeds)
            done.append((group, results[0], results[1][group.index(0), :len(ids[0])] if first else None))
        return done

    def encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Many passages (ingestion's model calls), same vectors as torch's ``encode``: tokenized once, sorted
        by token count and run in batches of at most ``batch_size`` texts cut where they cost least
        (``padded_batches``), each padded to its own longest text: a call's vectors never depend on the cut.
        ``solo``: one text a batch.

        One ``run`` holds no GIL for the whole batch. torch releases and takes back the GIL around each of its
        ~100 operators per forward pass; in the ingest worker, where the event loop and the bucket's threads
        hold it often, the model thread spends ~13% of its calls' wall time waiting to take it back."""
        if not texts:
            return np.zeros((0, 0), np.float32)
        encoded = self._tokenize(texts)
        ids = [np.asarray(row, dtype=np.int64) for row in encoded["input_ids"]]
        types = [np.asarray(row, dtype=np.int64) for row in encoded["token_type_ids"]]
        out: np.ndarray | None = None
        for group in padded_batches([len(row) for row in ids], 1 if self.solo else batch_size):
            feeds = self._padded_feeds(ids, types, group)
            vectors = self._batch_session.run([OUTPUT], feeds)[0]
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), np.float32)
            out[group] = vectors
        return out

    def batch_session(self, threads: int = 1) -> None:
        """The session ``encode_batches`` runs on: its own (weights of its own, ~90 MiB), on ``threads`` intra-op
        threads, so a model call never waits for a query's run on the shared one."""
        self._batch_session = _session(self.path, threads=max(1, threads))

    def encode_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
        """One text's pooled vector, its token vectors (one row per token, [CLS] and [SEP] included) and
        the tokenizer's character offsets of those rows."""
        batch = self._tokenize([text], return_tensors="np", return_offsets_mapping=True)
        pooled, tokens = self._session.run([OUTPUT, TOKENS], {name: batch[name].astype(np.int64) for name in INPUTS})
        return pooled[0], tokens[0], [tuple(map(int, o)) for o in batch["offset_mapping"][0]]

    def second_session(self) -> tuple[Any, ThreadPoolExecutor]:
        """A second one-thread session of the graph and the thread that runs it (a request's other half),
        made on first use (it holds its own weights)."""
        if self._second is None:
            with self._wide_lock:
                if self._second is None:
                    self._second = (_session(self.path, threads=1),
                                    ThreadPoolExecutor(1, thread_name_prefix="onnx-query-half"))
        return self._second

    def wide_session(self) -> Any:
        """The same graph on WIDE_THREADS intra-op threads, made on first use (it holds its own weights)."""
        if self._wide is None:
            with self._wide_lock:
                if self._wide is None:
                    self._wide = _session(self.path, threads=WIDE_THREADS)
        return self._wide

    @classmethod
    def load(cls, model: Any, model_dir: Path, *, cache: Path | None = None,
             name: str = "all-MiniLM-L6-v2") -> OnnxQueryEncoder:
        """The exported graph for these weights (exporting it first if needed), checked against torch;
        ``name``: the model's, the first part of its cache folders' names."""
        root = (cache or cache_root()) / "onnx"
        fused = root / f"{name}-{_export_key(model_dir)}"
        plain = root / f"{name}-{_export_key(model_dir, PLAIN_VARIANT)}"
        try:
            target = _cached_export(model, fused, plain)
        except Exception as exc:  # exporter failures come in many types; the cause is kept
            raise BindingError(f"could not export the query encoder to {plain}: {exc}") from exc
        encoder = cls(model, target / "model.onnx")
        encoder.variant = export_variant(target)
        difference = _largest_difference(model, target / "model.onnx")
        if difference > MAX_DIFFERENCE:
            raise ModelMismatchError(f"the exported query encoder at {target} differs from the model by "
                                     f"{difference:.1e} (allowed {MAX_DIFFERENCE:.0e}); delete the folder to "
                                     f"export it again")
        log.info("query encoder: %s export at %s (largest difference to torch %.1e)", encoder.variant,
                 target, difference)
        return encoder
