"""Named search statements sent as psycopg raw queries (``$1``-style placeholders).

psycopg converts ``%(name)s`` placeholders to ``$n`` on every execution of a statement longer
than 4 KB (it caches the conversion only for shorter ones), and the search statements are
8-30 KB: that re-parse cost ~0.4 ms of the worker's CPU per statement per search. Here each
statement is converted once, at import, and executed through psycopg's raw cursor, which
sends the text as it is. Server-side preparation is unchanged (psycopg prepares a statement
after its fifth execution on a connection, keyed by the text and the parameter types).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ..bindings.database import Connection

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%|%")


@dataclass(frozen=True)
class Statement:
    text: str                  # $n placeholders
    names: tuple[str, ...]     # the parameter behind $1, $2, ...

    @classmethod
    def convert(cls, sql: str) -> Statement:
        """``%(name)s`` → ``$n`` (one number per name, in order of first use), ``%%`` → ``%``."""
        names: dict[str, int] = {}

        def replace(match: re.Match) -> str:
            if match.group(0) == "%%":
                return "%"
            if match.group(1) is None:
                raise ValueError(f"a lone % at offset {match.start()}: write %% for the operator")
            number = names.setdefault(match.group(1), len(names) + 1)
            return f"${number}"

        text = _PLACEHOLDER.sub(replace, sql)
        return cls(text, tuple(names))

    def args(self, params: dict[str, Any]) -> list[Any]:
        return [params[name] for name in self.names]  # a missing parameter is a KeyError naming it


async def execute(conn: Connection, statement: Statement, params: dict[str, Any]) -> list[dict]:
    cursor = psycopg.AsyncRawCursor(conn, row_factory=dict_row)
    try:
        await cursor.execute(statement.text, statement.args(params))
        return await cursor.fetchall()
    finally:
        await cursor.close()
