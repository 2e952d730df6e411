"""The name a tool is handed to an LLM under.

A tool's name is its identity as its owner wrote it (``PDF&URLTool``, ``weather.get current``).
Model APIs take function names matching ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI, Anthropic, Gemini; MCP
2025-11-25 names fit it too), so every tool also gets an alias of that shape: the name itself when
it fits and no other tool of the entity holds it, else the name with every run of other characters
made ``_``, cut to leave room for ``_`` and a hash of the whole name. The alias is assigned once, at
the tool's first registration (stored, unique per entity), and stays while the tool exists.
``0024_tool_aliases.sql`` gives stored tools the same aliases with the same formula in SQL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection

ALIAS = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_ALIAS_CHARS = 64
_OTHER = re.compile(r"[^a-zA-Z0-9_-]+")
# 8 hex digits first; longer only if another tool of the entity holds that alias already
_SUFFIXES = (8, 12, 16, 24)


def alias_for(name: str, taken: Collection[str] = ()) -> str:
    """The alias ``name`` gets in an entity whose other tools hold ``taken``."""
    if ALIAS.match(name) and name not in taken:
        return name
    stem = _OTHER.sub("_", name)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
    for length in _SUFFIXES:
        alias = f"{stem[:MAX_ALIAS_CHARS - length - 1]}_{digest[:length]}"
        if alias not in taken:
            return alias
    raise ValueError(f"no free alias for tool {name!r}")   # 24 hex digits of sha256 taken: not reachable


def assign(names: list[str], held: dict[str, str]) -> dict[str, str]:
    """Aliases of ``names`` given the entity's stored ``held`` (name -> alias): a stored tool keeps
    its own; new names that fit as they are go first, so they keep their names where they can."""
    taken = set(held.values())
    out: dict[str, str] = {}
    for name in sorted((n for n in names if n not in held), key=lambda n: not ALIAS.match(n)):
        out[name] = alias_for(name, taken)
        taken.add(out[name])
    return {name: held.get(name) or out[name] for name in names}
