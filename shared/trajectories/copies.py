"""Which passages are copies of each other: the same text up to case, spacing and punctuation
(an exact fingerprint), or nearly the same text (Charikar's SimHash of its words and word pairs,
256 bits, within a tenth of them: the near-duplicate test web crawlers use).

A copy found in two documents (a clause pasted into several contracts, a page mirrored under
two names) then counts once in a trajectory."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

_WORD = re.compile(r"\w+")
BITS = 256
# SimHashes this many bits apart or fewer are near-copies. Among 1,500 msmarco passages (1.1M
# pairs), 60 pairs are this close, all the same passage reworded, re-headed or cut differently; a
# one-word edit plus an appended sentence stays this close for 4 passages in 5 (64 bits were
# noisier: at a threshold with as many true pairs, unrelated passages on one subject matched).
NEAR_BITS = 25
MIN_NEAR_WORDS = 8     # shorter texts are compared exactly only: a few words' SimHash is noise


def words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def fingerprint(text: str) -> str:
    """Equal for texts that differ only in case, spacing and punctuation."""
    return hashlib.blake2b(" ".join(words(text)).encode(), digest_size=12).hexdigest()


def simhash(text: str) -> int | None:
    """The SimHash of the text's words and word pairs, or None for a text too short to compare."""
    tokens = words(text)
    if len(tokens) < MIN_NEAR_WORDS:
        return None
    features = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
    digests = b"".join(hashlib.blake2b(f.encode(), digest_size=BITS // 8).digest() for f in features)
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(len(features), BITS // 8), axis=1)
    votes = bits.sum(axis=0, dtype=np.int64) * 2 > len(features)   # each bit: set in most features
    return int.from_bytes(np.packbits(votes).tobytes(), "big")


def _words64(value: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(BITS // 8, "big"), dtype=">u8").astype(np.uint64)


def near(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and (a ^ b).bit_count() <= NEAR_BITS


class CopyIndex:
    """Texts seen so far, by fingerprint and SimHash: ``has`` is one set lookup and one vectorised
    scan of the SimHashes (a trajectory holds up to a few thousand)."""

    def __init__(self) -> None:
        self.fingerprints: set[str] = set()
        self._hashes: list[np.ndarray] = []
        self._array = np.zeros((0, BITS // 64), dtype=np.uint64)

    def add(self, fingerprint: str, simhash: int | None) -> None:
        self.fingerprints.add(fingerprint)
        if simhash is not None:
            self._hashes.append(_words64(simhash))

    def has(self, fingerprint: str, simhash: int | None) -> bool:
        if fingerprint in self.fingerprints:
            return True
        if simhash is None or not self._hashes:
            return False
        if len(self._array) != len(self._hashes):
            self._array = np.stack(self._hashes)
        distances = np.bitwise_count(self._array ^ _words64(simhash)).sum(axis=1)
        return bool((distances <= NEAR_BITS).any())
