"""History written by the ingest upsert, inside its transaction (``ingest/grouped.py``).

Before the chunks a new version drops are deleted they are archived (while the entity keeps
history); after, the new version is recorded from the chunks as they then stand, the version it
replaces closed, and what the entity's retention no longer covers pruned. Statements go per
group (``executemany``, pipelined), as the upsert's own do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import sqlfiles
from .retention import Retention

SQL = sqlfiles.load("history.sql")


@dataclass(frozen=True)
class NewVersion:
    entity_id: str
    document_id: str
    version: int
    keep: list[str]       # the chunk ids of the new version
    replaces: bool        # a live version existed: some of its chunks may be dropped

    @property
    def where(self) -> dict:
        return {"entity_id": self.entity_id, "document_id": self.document_id}


async def archive_dropped(cur, versions: Sequence[NewVersion], retention: Retention) -> None:
    """The chunks each new version drops, into the archive (call before they are deleted)."""
    rows = [{**v.where, "keep": v.keep, **retention.params()} for v in versions if v.replaces]
    if rows:
        await cur.executemany(SQL["archive_dropped"], rows)


async def record(cur, versions: Sequence[NewVersion], retention: Retention) -> None:
    """Each new version recorded as live, the one it replaces closed, retention applied (call once
    ``chunks`` holds exactly the new versions' chunks)."""
    if not versions:
        return
    await cur.executemany(SQL["record_version"], [{**v.where, "version": v.version} for v in versions])
    replacing = [v.where for v in versions if v.replaces]
    if replacing:
        await cur.executemany(SQL["prune_versions"], [{**w, **retention.params()} for w in replacing])
        await cur.executemany(SQL["prune_archive"], replacing)
