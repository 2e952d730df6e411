"""``edgeindex tools import FILE`` and ``edgeindex collections list``: the selection catalogues from the
command line, over HTTP with the SDK (like the commands of cli_client.py)."""

from __future__ import annotations

import json
from pathlib import Path

from .cli_client import Target, _connection, _console, _dump


def cmd_tools_import(args) -> int:
    """Register the tools of an MCP ``tools/list`` result or an OpenAI ``tools`` array."""
    from edgeindex_client._base import tools_from

    text = Path(args.file).read_text(encoding="utf-8") if args.file != "-" else __import__("sys").stdin.read()
    try:
        tools = tools_from(json.loads(text))
    except (json.JSONDecodeError, ValueError) as exc:
        _console(stderr=True).print(f"edgeindex: {args.file}: {exc}")
        return 2
    with Target(args).client() as client:
        answer = client.register_tools(args.entity, tools)
    if args.json:
        _dump(answer)
        return 0
    _console().print(f"{answer.registered} tools registered for {answer.entity_id}: {answer.embedded} embedded, "
                     f"{answer.updated_without_embedding} updated without embedding, {answer.unchanged} unchanged"
                     + (f"; unresolved requires: {', '.join(answer.unresolved_requires)}"
                        if answer.unresolved_requires else ""))
    return 0


def cmd_collections(args) -> int:
    from rich.table import Table

    with Target(args).client() as client:
        if args.action == "describe":
            answer = client.describe_collection(args.entity, args.name, args.description)
            _dump(answer) if args.json else _console().print(f"{answer.name}: {answer.description}")
            return 0
        listing = client.list_collections(args.entity)
    if args.json:
        _dump(listing)
        return 0
    table = Table(title=f"collections of {listing.entity_id}", show_lines=True)
    for col in ("name", "documents", "description", "terms", "fields"):
        table.add_column(col, overflow="fold")
    for c in listing.collections:
        profile = c.profile or {}
        table.add_row(c.name, f"{c.ready_documents}/{c.documents}", c.description,
                      ", ".join(profile.get("terms", [])[:12]), ", ".join(profile.get("fields", [])[:12]))
    _console().print(table)
    return 0


def register(sub) -> None:
    tools = sub.add_parser("tools", help="the tool registry of an entity (tool selection)")
    tool_sub = tools.add_subparsers(dest="action", required=True)
    ti = tool_sub.add_parser("import", help="register the tools of an MCP tools/list result or an OpenAI tools "
                                            "array (a JSON file, or - for stdin)")
    ti.add_argument("file")
    ti.add_argument("--entity", required=True, help="the entity the tools belong to")
    _connection(ti)
    ti.set_defaults(func=cmd_tools_import)

    cols = sub.add_parser("collections", help="an entity's collections of documents and their profiles")
    col_sub = cols.add_subparsers(dest="action", required=True)
    cl = col_sub.add_parser("list")
    cl.add_argument("--entity", required=True)
    _connection(cl)
    cd = col_sub.add_parser("describe", help="set a collection's description")
    cd.add_argument("name")
    cd.add_argument("description")
    cd.add_argument("--entity", required=True)
    _connection(cd)
    cols.set_defaults(func=cmd_collections)
