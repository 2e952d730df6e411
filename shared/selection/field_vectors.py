"""Field vectors: an index's fields (a database's columns) embedded one by one, scored against a request.

A question names the columns it needs in its own words ("the nations founded after 1950" for
``country.IndepYear``, "how many languages are spoken" for ``countrylanguage.Language``), which
BM25 over field names misses and which one vector of a whole schema dilutes: a database of 11 tables
is one point, close to every question about any of them. Near-duplicate schemas (two flight
databases, three about students) differ in which columns they hold, so a descriptor is also scored
by how close its closest few fields are to the request (the mean cosine of its best ``FIELD_TOP``),
and each part (table) by its best ``PART_FIELD_TOP``. Spider databases top1, tuning / held-out half:
0.8631 / 0.8747 without field vectors, 0.9009 / 0.9165 with them; tables all_needed@5 0.8901 / 0.929
without, 0.9351 / 0.9708 with (``edgeindex eval --indices``).

A field is embedded as its qualified words ("country surface area" for ``country.SurfaceArea``: the
table says what the column is of); a plain field of a descriptor without parts with the last segment
of the descriptor's name before it ("singer name" for field ``Name`` of ``concert_singer.singer``).
A descriptor's vectors are stored as one float32 matrix (migration 0017), in ``field_texts`` order.
A collection's fields (its JSON documents' field paths) are embedded the same way as its profile follows
its documents, keeping the vectors of the fields it had (``embed_changed``, migration 0018).
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np

from ..validation import content_hash
from .text import split_identifier

# Version of how field texts are made: part of a descriptor's content hash, so a change embeds again.
FIELD_TEXT_VERSION = 1
# Fields embedded per descriptor: a request needs a handful of columns; a schema of thousands of
# columns keeps its first MAX_FIELD_VECTORS (its other fields still count in BM25 and its vector).
MAX_FIELD_VECTORS = 256
FIELD_TOP = 5          # a descriptor: mean cosine of its best 5 fields ...
FIELD_WEIGHT = 0.6     # ... added in z units to its final score
PART_FIELD_TOP = 2     # a part (table): mean of its best 2 fields ...
PART_FIELD_WEIGHT = 1.0   # ... added in z units to its part score (both swept on the tuning half)


# OpenBLAS spreads a matrix-vector product over threads above a size: thousands of fields (Spider's 4,407
# x 384) then waited on thread hand-offs, p99 16 ms on a busy 2-core machine against 0.18 ms for the same
# product in slices this size, each run on the calling thread (p50 0.05 vs 0.11 ms when idle).
BLOCK_ELEMENTS = 1024 * 384


def _words(text: str) -> str:
    return " ".join(split_identifier(text))


class FieldText(NamedTuple):
    text: str            # what is embedded
    part: str | None     # the table a qualified field belongs to (None for a descriptor without parts)
    field: str           # the field as registered


def field_texts(name: str, fields: tuple[str, ...] | list[str], part_names: set[str]) -> list[FieldText]:
    """The fields to embed, in order. A descriptor with parts lists its tables among its fields too:
    those are parts, not columns, and are left out."""
    leaf = _words(name.rsplit(".", 1)[-1])
    out: list[FieldText] = []
    for f in fields:
        if len(out) >= MAX_FIELD_VECTORS:
            break
        words = _words(f)
        if not words:
            continue
        if part_names:
            if "." in f:
                out.append(FieldText(words, f.split(".", 1)[0], f))
        else:
            out.append(FieldText(f"{leaf} {words}" if leaf and not words.startswith(leaf) else words, None, f))
    return out


def pack(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def unpack(blob: bytes | memoryview | None, rows: int, dimension: int) -> np.ndarray | None:
    """The stored matrix, or None when it is missing or was made for other fields (a stale row)."""
    if blob is None or rows == 0:
        return None
    matrix = np.frombuffer(bytes(blob), dtype=np.float32)
    if matrix.size != rows * dimension:
        return None
    return matrix.reshape(rows, dimension)


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` in row slices small enough for one thread (BLOCK_ELEMENTS)."""
    rows = max(1, BLOCK_ELEMENTS // max(matrix.shape[1], 1))
    if len(matrix) <= rows:
        return matrix @ vector
    return np.concatenate([matrix[i:i + rows] @ vector for i in range(0, len(matrix), rows)])


def top_mean(values: np.ndarray, groups: np.ndarray, n_groups: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the mean of its ``top`` largest values; and whether the group has any value.

    One argsort of a composite key (group, then value descending): no Python loop per group.
    Values are cosines, in [-1, 1].
    """
    if values.size == 0:
        return np.zeros(n_groups, np.float32), np.zeros(n_groups, bool)
    order = np.argsort(groups * 4.0 - values, kind="stable")
    g = groups[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, g.size]))
    keep = (np.arange(g.size) - first) < top
    sums = np.bincount(g[keep], weights=values[order][keep], minlength=n_groups)
    counts = np.bincount(g[keep], minlength=n_groups)
    has = counts > 0
    return (sums / np.maximum(counts, 1)).astype(np.float32), has


def texts_hash(model_id: str, texts: list[str]) -> str:
    """What a stored matrix was made from: the model and the field texts, in order. Two equal hashes:
    the stored rows are the vectors of these texts, nothing to embed."""
    return content_hash(json.dumps({"model": model_id, "texts": texts}))


async def embed_changed(embedder, texts: list[str], previous: dict[str, np.ndarray]) -> tuple[np.ndarray | None, int]:
    """The matrix of ``texts`` (None when there is none) and how many were embedded: a text of
    ``previous`` (text -> its vector by the same model) keeps its vector, only the others are embedded.

    For an index whose fields follow its documents (a collection): a new document brings a field or two,
    and only those cost an embedding; a field that leaves costs none.
    """
    if not texts:
        return None, 0
    missing = [t for t in dict.fromkeys(texts) if t not in previous]
    made = dict(zip(missing, await embedder.embed(missing))) if missing else {}
    return np.vstack([made[t] if t in made else previous[t] for t in texts]).astype(np.float32), len(missing)
