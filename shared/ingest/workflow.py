"""The ingestion workflow (being built: see issue 3)."""

from __future__ import annotations

from ..workflow import Workflow


class IngestDocument(Workflow):
    async def run(self, event, step):
        raise NotImplementedError("ingestion workflow not built yet")
