"""What changed between two versions of a document, chunk by chunk.

The versions' chunks are aligned by content hash in order (difflib's longest matching blocks):
equal chunks are unchanged (or moved, when their position differs); where the two sides differ,
chunks pair up in order as changed, and what is left over is added or removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class VersionChunk:
    position: int
    chunk_id: str
    content: str
    content_hash: str


def _entry(chunk: VersionChunk) -> dict:
    return {"position": chunk.position, "chunk_id": chunk.chunk_id, "text": chunk.content}


def compare(before: list[VersionChunk], after: list[VersionChunk]) -> dict:
    """``added``, ``removed`` and ``changed`` chunks (with their text), and how many stayed."""
    matcher = SequenceMatcher(a=[c.content_hash for c in before], b=[c.content_hash for c in after],
                              autojunk=False)
    added: list[dict] = []
    removed: list[dict] = []
    changed: list[dict] = []
    unchanged = moved = 0
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            unchanged += a1 - a0
            moved += sum(before[i].position != after[j].position for i, j in zip(range(a0, a1), range(b0, b1)))
            continue
        old, new = before[a0:a1], after[b0:b1]
        for was, now in zip(old, new):
            changed.append({**_entry(now), "previous": _entry(was)})
        removed += [_entry(c) for c in old[len(new):]]
        added += [_entry(c) for c in new[len(old):]]
    return {"added": added, "removed": removed, "changed": changed, "unchanged": unchanged, "moved": moved}
