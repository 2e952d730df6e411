"""Files on disk: which to upload, their document ids, content types and hashes."""

from __future__ import annotations

import glob
import hashlib
import mimetypes
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The server's limit on a document id (shared/validation.py: any visible text, no control characters).
MAX_ID_BYTES = 512
_TYPES = {".txt": "text/plain", ".text": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown",
          ".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf", ".json": "application/json"}


def guess_content_type(path: str | os.PathLike) -> str:
    """The media type the server expects for this file, by its suffix (other text is text/plain)."""
    suffix = Path(path).suffix.lower()
    if suffix in _TYPES:
        return _TYPES[suffix]
    guessed, _ = mimetypes.guess_type(str(path))
    if guessed is None or guessed.startswith("text/"):
        return "text/plain"
    return guessed


def sha256_file(path: str | os.PathLike, *, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def document_id_for(path: str | os.PathLike, root: str | os.PathLike | None = None, *, prefix: str = "") -> str:
    """A stable document id from a file's path: its path relative to ``root``, ``/``-separated.

    ``docs/a b.md`` under the folder uploaded stays ``docs/a b.md`` (a file named directly is
    named by its file name). The server takes any visible text up to 512 bytes of UTF-8; a longer
    path keeps its end behind a hash of the whole, so the id stays stable and distinct.
    """
    p = Path(path)
    rel = p.relative_to(root) if root is not None and p != Path(root) else Path(p.name)
    raw = prefix + rel.as_posix()
    if len(raw.encode("utf-8")) > MAX_ID_BYTES:
        tag = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]
        tail = raw.encode("utf-8")[-(MAX_ID_BYTES - len(tag) - 1):].decode("utf-8", errors="ignore")
        raw = f"{tag}-{tail}"
    return raw


@dataclass(frozen=True)
class FileToUpload:
    path: Path
    document_id: str
    root: Path | None  # the folder it was found under (None for a file named directly)


def collect_files(paths: Iterable[str | os.PathLike], *, pattern: str | None = None, prefix: str = "",
                  hidden: bool = False) -> list[FileToUpload]:
    """Files named directly, found by a glob, or under a folder (walked; ``pattern`` filters names there).

    Document ids are relative to the folder given, so the same folder uploaded from
    anywhere gives the same ids (and re-uploads replace instead of duplicating)."""
    found: dict[Path, FileToUpload] = {}

    def add(file: Path, root: Path | None) -> None:
        file = file.resolve()
        if file not in found:
            found[file] = FileToUpload(file, document_id_for(file, root, prefix=prefix), root)

    for raw in paths:
        text = str(raw)
        magic = glob.has_magic(text)
        matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))] if magic else [Path(text)]
        if not matches:
            raise FileNotFoundError(f"no file matches {text!r}")
        # a glob's files are named from the folder before its first wildcard, as a walk of that folder would
        base = _glob_base(text) if magic else None
        for match in matches:
            if match.is_dir():
                root = match.resolve()
                for file in _walk(root, hidden=hidden):
                    if pattern is None or file.match(pattern):
                        add(file, root)
            elif match.is_file():
                add(match, base)
            elif not magic:
                raise FileNotFoundError(f"no such file or folder: {text!r}")
    return list(found.values())


def _glob_base(pattern: str) -> Path:
    parts = Path(pattern).parts
    fixed = parts[:next(i for i, p in enumerate(parts) if glob.has_magic(p))]
    return Path(*fixed).resolve() if fixed else Path.cwd().resolve()


def _walk(root: Path, *, hidden: bool) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        if not hidden:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
        dirs.sort()
        for name in sorted(files):
            if hidden or not name.startswith("."):
                yield Path(folder) / name
