"""Hash-diff of a document's new chunks against the chunks already stored for it.

A stored chunk whose content hash (and embedding model) matches a new chunk is
reused: its row and vector stay, and only its position changes if it moved.
Everything else is embedded anew; stored chunks nobody matched are stale.
Matching takes equal hashes in document order, so a paragraph repeated three
times keeps three rows.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .chunking import Chunk


@dataclass(frozen=True)
class StoredChunk:
    id: str
    position: int
    start: int
    end: int
    hash: str
    model_id: str


@dataclass
class DiffPlan:
    ids: list[str]                    # chunk id per new position
    embed: list[int]                  # positions whose content must be embedded
    moved: list[str] = field(default_factory=list)   # reused ids that get new positions/offsets
    stale: list[str] = field(default_factory=list)   # stored ids to delete

    @property
    def reused(self) -> int:
        return len(self.ids) - len(self.embed)

    def to_json(self) -> dict:
        return {"ids": self.ids, "embed": self.embed, "moved": self.moved, "stale": self.stale}

    @classmethod
    def from_json(cls, data: dict) -> DiffPlan:
        return cls(list(data["ids"]), list(data["embed"]), list(data["moved"]), list(data["stale"]))


def plan(new: list[Chunk], stored: Iterable[StoredChunk], *, model_id: str,
         new_id: Callable[[int], str]) -> DiffPlan:
    """Which new chunks reuse a stored row, which need embedding, which stored rows are stale.

    ``new_id(position)`` names a chunk that is embedded anew; it must be deterministic
    so that running the same version twice writes the same rows.
    """
    by_hash: dict[str, deque[StoredChunk]] = defaultdict(deque)
    stored = sorted(stored, key=lambda s: s.position)
    for row in stored:
        if row.model_id == model_id:  # a vector from another model is never reused
            by_hash[row.hash].append(row)
    ids: list[str] = []
    embed: list[int] = []
    moved: list[str] = []
    kept: set[str] = set()
    for chunk in new:
        candidates = by_hash.get(chunk.hash)
        if candidates:
            row = candidates.popleft()
            ids.append(row.id)
            kept.add(row.id)
            if (row.position, row.start, row.end) != (chunk.position, chunk.start, chunk.end):
                moved.append(row.id)
        else:
            ids.append(new_id(chunk.position))
            embed.append(chunk.position)
    stale = [row.id for row in stored if row.id not in kept]
    return DiffPlan(ids, embed, moved, stale)
