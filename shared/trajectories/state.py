"""What a trajectory has touched, and how one step's ranked candidates become its answer.

Pure logic: the KV (``store``) and the search (``service``) are elsewhere. A chunk counts as seen
when it was returned before, or is a copy (``copies``) of a chunk returned before; a copy inside one
answer counts once too.

Novelty is measured on what a search without the trajectory would answer (the candidates' first
k): the share of those chunks, and of their documents, that are new. It falls to 0 when a step
would only repeat what the agent has, whatever ``seen`` does with the repeats.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import copies

SeenMode = Literal["exclude", "include", "mark"]


@dataclass
class Seen:
    """A chunk returned in this trajectory (no text: the grounding reads it back from the database)."""

    entity_id: str
    document_id: str
    position: int
    fingerprint: str
    simhash: int | None
    tokens: int
    step: int


@dataclass
class Step:
    query: str
    at: float
    returned: list[str]
    novelty: dict[str, float]
    tokens: int


@dataclass
class Trajectory:
    id: str
    key_id: str
    created: float = field(default_factory=time.time)
    steps: list[Step] = field(default_factory=list)
    chunks: dict[str, Seen] = field(default_factory=dict)
    tokens: int = 0

    def documents(self) -> list[tuple[str, str]]:
        """(entity, document) of every chunk returned, in the order first touched."""
        return list(dict.fromkeys((s.entity_id, s.document_id) for s in self.chunks.values()))

    def copy_index(self) -> copies.CopyIndex:
        """The fingerprints and SimHashes of what it returned, to test candidates against."""
        index = copies.CopyIndex()
        for seen in self.chunks.values():
            index.add(seen.fingerprint, seen.simhash)
        return index

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "steps": len(self.steps), "chunks": len(self.chunks),
                "documents": len(self.documents()), "tokens": self.tokens}


class Candidate:
    """A result as the search returned it (text included). Its fingerprint, SimHash and tokens are
    what ingestion stored for the chunk, or computed when first asked for: a step looks at the candidates only until its answer is full, a
    candidate whose fingerprint is known (an exact copy) needs no SimHash, and hashing a passage costs
    more than the step's own bookkeeping."""

    __slots__ = ("result", "_tokens", "_words", "_fingerprint", "_simhash", "_simhashed")

    def __init__(self, result: dict, tokens: int | Callable[[], int],
                 signature: tuple[str, int | None] | None = None) -> None:
        self.result = result
        self._tokens = tokens
        self._words: list[str] | None = None
        # (fingerprint, SimHash) as ingestion stored them for the chunk's text, when it did
        self._fingerprint: str | None = signature[0] if signature else None
        self._simhash: int | None = signature[1] if signature else None
        self._simhashed = signature is not None

    def _split(self) -> list[str]:
        if self._words is None:
            self._words = copies.words(self.result.get("text") or "")
        return self._words

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = copies.fingerprint_of(self._split())
        return self._fingerprint

    @property
    def simhash(self) -> int | None:
        if not self._simhashed:
            self._simhash, self._simhashed = copies.simhash_of(self._split()), True
        return self._simhash

    @property
    def tokens(self) -> int:
        if callable(self._tokens):
            self._tokens = self._tokens()
        return self._tokens


@dataclass
class StepAnswer:
    answered: list[Candidate]
    results: list[dict]   # the answered candidates' results, marked with ``seen`` in mode "mark"
    novelty: dict[str, float]
    left_out: int         # candidates not returned because they were seen (exclude)


def candidate(result: dict, tokens: int | Callable[[], int],
              signature: tuple[str, int | None] | None = None) -> Candidate:
    """``tokens``: the count, or how to count it (called only for a candidate that is returned);
    ``signature``: the text's stored fingerprint and SimHash (computed from the text without)."""
    return Candidate(result, tokens, signature)


def take_step(trajectory: Trajectory, candidates: list[Candidate], *, k: int, seen: SeenMode) -> StepAnswer:
    """The answer of one step from the ranked candidates (more than k when ``exclude`` must skip some)."""
    known_documents = set(trajectory.documents())
    index = trajectory.copy_index()  # grows with the candidates, so a copy inside this answer counts once too
    verdicts: list[bool] = []

    def repeat(i: int) -> bool:
        """Whether candidate i repeats the trajectory or a candidate ranked before it (in rank order)."""
        while len(verdicts) <= i:
            verdicts.append(index.repeats(candidates[len(verdicts)]))
        return verdicts[i]

    plain = [(c, repeat(i)) for i, c in enumerate(candidates[:k])]
    documents = {(c.result["entity_id"], c.result["document_id"]) for c, _ in plain}
    novelty = {
        "chunks": round(sum(not was for _, was in plain) / len(plain), 4) if plain else 0.0,
        "documents": round(len(documents - known_documents) / len(documents), 4) if documents else 0.0,
    }
    if seen == "exclude":
        answer: list[Candidate] = []
        skipped = 0
        for i, c in enumerate(candidates):
            if len(answer) == k:
                break
            if repeat(i):
                skipped += 1
            else:
                answer.append(c)
        return StepAnswer(answer, [c.result for c in answer], novelty, skipped)
    answered = [c for c, _ in plain]
    if seen == "mark":
        return StepAnswer(answered, [{**c.result, "seen": was} for c, was in plain], novelty, 0)
    return StepAnswer(answered, [c.result for c in answered], novelty, 0)

def record(trajectory: Trajectory, query: str, answered: list[Candidate], novelty: dict[str, float],
           tokens: int) -> None:
    """Adds a step and what it returned (a chunk returned again keeps its first step)."""
    number = len(trajectory.steps) + 1
    for c in answered:
        r = c.result
        trajectory.chunks.setdefault(r["chunk_id"], Seen(r["entity_id"], r["document_id"], r["position"],
                                                         c.fingerprint, c.simhash, c.tokens, number))
    trajectory.steps.append(Step(query, time.time(), [c.result["chunk_id"] for c in answered], novelty, tokens))
    trajectory.tokens += tokens
