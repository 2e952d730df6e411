"""Which passages are copies of each other: the same text up to case, spacing and punctuation
(an exact fingerprint), or nearly the same text (Charikar's SimHash of its words and word pairs,
256 bits, within a tenth of them: the near-duplicate test web crawlers use).

A copy found in two documents (a clause pasted into several contracts, a page mirrored under
two names) then counts once in a trajectory. Ingestion stores each chunk's fingerprint and SimHash
(``signature``); a trajectory computes them only for a chunk stored without (a bulk load)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from typing import Protocol

import numpy as np

_WORD = re.compile(r"\w+")
BITS = 256
# SimHashes this many bits apart or fewer are near-copies. Among 1,500 msmarco passages (1.1M
# pairs), 44-56 pairs are this close (by the hash's seeds), all the same passage reworded, re-headed
# or cut differently; a one-word edit plus an appended sentence stays this close for 4 passages in 5
# (64 bits were noisier: at a threshold with as many true pairs, unrelated passages on one subject
# matched).
NEAR_BITS = 25
MIN_NEAR_WORDS = 8     # shorter texts are compared exactly only: a few words' SimHash is noise


# SimHash's features are hashed with CRC-32 (stable across processes, as the KV's stored SimHashes
# must be) spread to 64 bits by splitmix64's finaliser; each feature's 256 bits are four finalised
# words of it. Vectorised, a passage costs ~45 us where a blake2b digest per feature cost ~90.
_M1, _M2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)
_LANES = (np.arange(1, BITS // 64 + 1, dtype=np.uint64) * _GOLDEN)[None, :]
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)


def words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def fingerprint(text: str) -> str:
    """Equal for texts that differ only in case, spacing and punctuation."""
    return fingerprint_of(words(text))


def simhash(text: str) -> int | None:
    """The SimHash of the text's words and word pairs, or None for a text too short to compare."""
    return simhash_of(words(text))


def fingerprint_of(tokens: list[str]) -> str:
    """``fingerprint`` of a text split by ``words``."""
    return hashlib.blake2b(" ".join(tokens).encode(), digest_size=12).hexdigest()


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit moves every output bit (uint64 products wrap)."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


def simhash_of(tokens: list[str]) -> int | None:
    """``simhash`` of a text split by ``words``."""
    if len(tokens) < MIN_NEAR_WORDS:
        return None
    with np.errstate(over="ignore"):
        single = _mix(np.array([zlib.crc32(t.encode()) for t in tokens], dtype=np.uint64))
        pairs = _mix(single[:-1] ^ (single[1:] * _GOLDEN))   # ordered: "a b" is not "b a"
        features = np.concatenate([single, pairs])
        lanes = _mix(features[:, None] ^ _LANES)
    bits = np.unpackbits(lanes.view(np.uint8), axis=1)
    votes = bits.sum(axis=0, dtype=np.int32) * 2 > len(features)   # each bit: set in most features
    return int.from_bytes(np.packbits(votes).tobytes(), "big")


def stored(simhash: int | None) -> bytes | None:
    """A SimHash as a chunk row keeps it (``chunks.copy_simhash``, 32 bytes)."""
    return None if simhash is None else simhash.to_bytes(BITS // 8, "big")


def loaded(raw: bytes | None) -> int | None:
    return None if raw is None else int.from_bytes(raw, "big")


def signature(text: str) -> tuple[str, bytes | None]:
    """What ingestion stores of a chunk's text (``copy_fingerprint``, ``copy_simhash``), so a
    trajectory step reads its candidates' instead of hashing their text."""
    split = words(text)
    return fingerprint_of(split), stored(simhash_of(split))


def near(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and (a ^ b).bit_count() <= NEAR_BITS


class Hashed(Protocol):
    """A text's fingerprint and SimHash (``state.Candidate`` computes each when first read)."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def simhash(self) -> int | None: ...


class CopyIndex:
    """Texts seen so far, by fingerprint and SimHash: ``repeats`` is one set lookup and a scan of the
    SimHashes: Python's XOR and bit count on the 256-bit integers (~0.1 us each) while there are
    few, one vectorised pass past SCAN_IN_PYTHON (a trajectory holds up to a few thousand)."""

    SCAN_IN_PYTHON = 128

    def __init__(self) -> None:
        self.fingerprints: set[str] = set()
        self._hashes: list[int] = []
        self._array = np.zeros((0, BITS // 64), dtype=np.uint64)

    def add(self, fingerprint: str, simhash: int | None) -> None:
        self.fingerprints.add(fingerprint)
        if simhash is not None:
            self._hashes.append(simhash)

    def repeats(self, item: Hashed) -> bool:
        """Whether the item copies a text added before; if not, it is added. Its SimHash is read only
        when its fingerprint is new: an exact copy has the same words, so the same SimHash."""
        if item.fingerprint in self.fingerprints:
            return True
        found = self.near(item.simhash)
        self.add(item.fingerprint, item.simhash)
        return found

    def near(self, simhash: int | None) -> bool:
        """Whether a SimHash within NEAR_BITS of this one was added."""
        if simhash is None or not self._hashes:
            return False
        if len(self._hashes) <= self.SCAN_IN_PYTHON:
            return any((simhash ^ h).bit_count() <= NEAR_BITS for h in self._hashes)
        if len(self._array) != len(self._hashes):
            self._array = _as_words(self._hashes)
        distances = np.bitwise_count(self._array ^ _as_words([simhash])).sum(axis=1)
        return bool((distances <= NEAR_BITS).any())


def _as_words(hashes: list[int]) -> np.ndarray:
    """SimHashes as rows of 64-bit words."""
    raw = b"".join(h.to_bytes(BITS // 8, "big") for h in hashes)
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(len(hashes), BITS // 64)
