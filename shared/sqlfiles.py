"""Named SQL kept in ``.sql`` files next to this module.

A file holds blocks that start with ``-- name: some_query``; the text up to the
next marker is the statement. Queries use psycopg's ``%(name)s`` placeholders.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

_MARKER = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def parse(text: str) -> dict[str, str]:
    parts = _MARKER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        if name in queries:
            raise ValueError(f"duplicate query name {name!r}")
        queries[name] = body.strip()
    return queries


@cache
def load(filename: str) -> dict[str, str]:
    """Queries of ``shared/sql/<filename>``, by name."""
    return parse(files("edgeindex").joinpath("sql", filename).read_text(encoding="utf-8"))
