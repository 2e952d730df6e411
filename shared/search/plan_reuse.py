"""The search statement planned once per entity set and request shape, not at every search.

Planning is about a third of an uncached search's Postgres CPU. Custom plans are the pool's
default (``bindings/database.py``) because a generic plan of the parameterised statement is unsafe:
it prunes no partition for ``entity_id = ANY($n)`` and estimates an entity's rows from the
partition's average, so a large tenant beside many small ones would get an exact sort instead of
the HNSW walk.

Here every parameter that can shape the plan is written into the statement text as a literal of
the type psycopg would have sent it as (``'{t1}'::text[]``, ``10::int2``, ``NULL``), so the planner
sees exactly what a custom plan sees: the entity ids (partition pruning and the entity's own row
estimates), which filters are NULL, the switches, k and the candidate counts. What stays a parameter
is what the planner never reads for a choice (``KEPT``): the query's embedding and text (the text is
parsed per configuration row at run time, and pgvector's cost model does not look at the vector) and
the weights and thresholds of the scores, so the generic plan of that text is the custom plan. ``tests/integration/test_search_plan_reuse.py``
compares the two plans, node for node, on tenants of many sizes and on many request shapes.

Each such text is prepared on the connection (psycopg's prepared-statement LRU: at most
``prepared_max`` per connection, the oldest DEALLOCATEd) and run on a connection of the database's
``generic_pool`` (``bindings/database.py``), whose session default is ``force_generic_plan`` and which
runs nothing but these texts (and the search session settings): one statement per search. The main
pool's connections, where every other statement runs, never leave custom plans, and no search
pays for a ``SET plan_cache_mode`` to generic and back (two statements more per search).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import psycopg
from psycopg.adapt import PyFormat, Transformer
from psycopg.postgres import types as pg_types
from psycopg.rows import dict_row

from ..bindings.database import Connection
from .statements import Statement

# Parameters of the prepared statement: values the planner never reads for a choice of plan. The
# query's embedding and its text (see above), and the numbers that only weigh, gate or shape scores
# above the scans (a fusion's weights and thresholds, BM25's constants, whether text and summary
# come back): as literals each would only multiply the texts (an agent varying alpha would prepare
# a statement per request). What picks scans, joins and row counts is written in: the entities, every
# filter, the switches, the candidate counts and k (a LIMIT parameter is estimated at 10% of rows),
# and the fusion (a blend leaves RRF's rank windows out of a custom plan: two sorts fewer).
KEPT = frozenset({"embedding", "model_id", "query", "alpha", "rrf_k", "vector_threshold", "text_threshold",
                  "trigram_threshold", "bm25_k1", "bm25_b", "tsv_weights", "include_text", "include_summary"})
# Prepared statements a search connection keeps (psycopg's LRU: the oldest is DEALLOCATEd). One
# reused search statement holds ~1.35 MB of the backend's memory (plan 0.54, query trees 0.8: 12k
# chunks, pg_backend_memory_contexts), so psycopg's default of 100 could reach ~135 MB per connection
# for an agent fleet of many entity sets; 16 bound it to ~22 MB, and a statement pushed out is only
# planned again (a custom plan's cost, once).
PREPARED_MAX = 16
# Texts built in this process (one per statement variant and value set of the literals): the
# oldest goes first. The connection's own bound (psycopg's prepared_max) is separate.
MAX_TEXTS = 256

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%|%")

_texts: OrderedDict[tuple, Statement] = OrderedDict()
_transformer = Transformer()


def _type_name(oid: int) -> str:
    info = pg_types.get(oid)  # an array's oid finds its element type's entry
    if info is None:
        raise ValueError(f"no literal form for a parameter of type oid {oid}")
    return f"{info.name}[]" if info.array_oid == oid else info.name


def literal(value: Any, transformer: Transformer = _transformer) -> str:
    """``value`` as SQL text that means what it means as a parameter psycopg sends: its text form,
    quoted and escaped by psycopg, cast to the type psycopg would have declared (none when psycopg
    leaves the type to the server, as for ``str`` and ``None``)."""
    if value is None:
        return "NULL"
    dumper = transformer.get_dumper(value, PyFormat.TEXT).upgrade(value, PyFormat.TEXT)
    quoted = bytes(dumper.quote(value)).decode()
    if not dumper.oid:
        return quoted
    return f"{quoted}::{_type_name(dumper.oid)}"


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def build(sql: str, params: dict[str, Any], kept: frozenset[str] | None = None) -> Statement:
    """The ``%(name)s`` statement ``sql`` with every parameter but those in ``kept`` written in as a
    literal; the kept ones become ``$n`` (in one pass, so a literal's own text is never scanned)."""
    kept = KEPT if kept is None else kept
    names: dict[str, int] = {}
    literals: dict[str, str] = {}

    def replace(match: re.Match) -> str:
        if match.group(0) == "%%":
            return "%"
        name = match.group(1)
        if name is None:
            raise ValueError(f"a lone % at offset {match.start()}: write %% for the operator")
        if name in kept:
            return f"${names.setdefault(name, len(names) + 1)}"
        if name not in literals:
            literals[name] = literal(params[name])  # a missing parameter is a KeyError naming it
        return literals[name]

    text = _PLACEHOLDER.sub(replace, sql)
    return Statement(text, tuple(names))


def statement_for(key: Any, sql: str, params: dict[str, Any]) -> Statement:
    """``build(sql, params)``, remembered for the same ``key`` (the variant) and literal values."""
    full_key = (key, tuple((name, _hashable(value)) for name, value in sorted(params.items())
                           if name not in KEPT))
    found = _texts.get(full_key)
    if found is not None:
        _texts.move_to_end(full_key)
        return found
    built = build(sql, params)
    _texts[full_key] = built
    while len(_texts) > MAX_TEXTS:
        _texts.popitem(last=False)
    return built


async def execute(conn: Connection, statement: Statement, params: dict[str, Any]) -> list[dict]:
    """Run ``statement`` (from :func:`statement_for`) prepared, in one round trip. ``conn`` must be
    a connection of ``Database.generic_connection()``: there its plan is the generic one, made once."""
    cursor = psycopg.AsyncRawCursor(conn, row_factory=dict_row)
    try:
        await cursor.execute(statement.text, statement.args(params), prepare=True)
        return await cursor.fetchall()
    finally:
        await cursor.close()
