"""Pieces of the public API that both clients return."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .models import Document


@dataclass
class UploadOutcome:
    """One file of ``upload_files``: its document, or the error that stopped it."""

    path: Path
    document_id: str
    document: Document | None = None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def skipped(self) -> bool:
        """The file was the document's ready version already: nothing was sent."""
        return self.document is not None and self.document.unchanged
