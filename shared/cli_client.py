"""``edgeindex upload | search | status | keys | entities``: the operator's commands, built on the SDK.

They talk HTTP through ``edgeindex_client`` like any other client. Where to connect
comes from flags, then ``$EDGEINDEX_URL`` / ``$EDGEINDEX_UPLOAD_URL`` / ``$EDGEINDEX_SEARCH_URL``,
then the ports in wrangler.toml (the dev stack); the key from ``--api-key``, then
``$EDGEINDEX_API_KEY``, ``$EDGEINDEX_ADMIN_KEY``, then the dev stack's ``admin_key`` file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from .errors import ConfigError, EdgeIndexError
from .shorten import shorten

SNIPPET_CHARS = 160


# --- connection ----------------------------------------------------------------------------------

class Target:
    def __init__(self, args: argparse.Namespace) -> None:
        from . import config as config_module

        cfg = None
        try:
            cfg = config_module.load(Path(args.config) if args.config else config_module.find_config())
        except (ConfigError, OSError):
            pass  # no wrangler.toml here: flags and environment only

        def local(worker: str) -> str | None:
            if cfg is None or worker not in cfg.workers:
                return None
            return f"http://127.0.0.1:{cfg.worker(worker).port}"

        base = args.url or os.environ.get("EDGEINDEX_URL")
        self.upload_url = args.upload_url or base or os.environ.get("EDGEINDEX_UPLOAD_URL") or local("upload")
        self.search_url = args.search_url or base or os.environ.get("EDGEINDEX_SEARCH_URL") or local("search")
        self.ingest_url = base or os.environ.get("EDGEINDEX_INGEST_URL") or local("ingest")
        # $EDGEINDEX_MCP_URL is the MCP endpoint (`edgeindex mcp` takes it); its worker's /health is beside it
        mcp = os.environ.get("EDGEINDEX_MCP_URL", "").rstrip("/").removesuffix("/mcp")
        self.mcp_url = base or mcp or local("mcp")
        key = args.api_key or os.environ.get("EDGEINDEX_API_KEY") or os.environ.get("EDGEINDEX_ADMIN_KEY")
        key_file = cfg.state_path / "admin_key" if cfg is not None else None
        if not key and key_file is not None and key_file.exists():
            key = key_file.read_text().strip()
        if not key:
            where = (f"the dev stack's key file {key_file} does not exist" if key_file is not None
                     else "no wrangler.toml here, so no dev stack's key file to read")
            raise EdgeIndexError(f"no API key: pass --api-key or set EDGEINDEX_API_KEY ({where})", field="api_key")
        if not self.upload_url or not self.search_url:
            raise EdgeIndexError("no server: pass --url (or --upload-url/--search-url) or run inside a project "
                                 "with a wrangler.toml", field="url")
        self.api_key = key
        self.timeout = args.timeout

    def kwargs(self) -> dict[str, Any]:
        return {"api_key": self.api_key, "upload_url": self.upload_url, "search_url": self.search_url,
                "timeout": self.timeout}

    def client(self):
        from edgeindex_client import Client

        return Client(**self.kwargs())

    def async_client(self):
        from edgeindex_client import AsyncClient

        return AsyncClient(**self.kwargs())


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _dump(value: Any) -> None:
    def plain(v):
        return v.model_dump(mode="json") if hasattr(v, "model_dump") else v

    data = [plain(v) for v in value] if isinstance(value, list) else plain(value)
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _split(values: list[str] | None) -> list[str] | None:
    """``--entity a,b --entity c`` → [a, b, c]."""
    if not values:
        return None
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


# --- upload --------------------------------------------------------------------------------------

def cmd_upload(args) -> int:
    return asyncio.run(_upload(args))


async def _upload(args) -> int:
    from edgeindex_client import collect_files
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task) -> Text:
            elapsed = task.elapsed or 0.0
            rate = task.completed / elapsed if elapsed > 0 else 0.0
            return Text(f"{rate:,.1f} docs/s", style="cyan")

    console = _console(stderr=args.json)
    target = Target(args)
    try:
        files = collect_files(args.paths, pattern=args.pattern, prefix=args.prefix or "", hidden=args.hidden)
    except FileNotFoundError as exc:
        raise EdgeIndexError(str(exc), field="paths") from None
    if not files:
        console.print("nothing to upload")
        return 1
    tags = _split(args.tags)
    counts = {"uploaded": 0, "unchanged": 0, "failed": 0}
    failures: list[tuple[str, str]] = []
    total_bytes = sum(f.path.stat().st_size for f in files)
    async with target.async_client() as client:
        if args.create_entity:
            try:
                await client.create_entity(args.entity, args.kind)
            except Exception as exc:  # exists already (409), or the key may not create entities
                if getattr(exc, "status", None) != 409:
                    raise
        columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(),
                   TextColumn("{task.fields[note]}"), TimeElapsedColumn()]
        started = time.perf_counter()
        with Progress(*columns, console=console, transient=False, disable=args.json) as progress:
            task = progress.add_task("uploading", total=len(files), note="")

            def on_result(outcome) -> None:
                if outcome.error is not None:
                    counts["failed"] += 1
                    failures.append((str(outcome.path), str(outcome.error)))
                elif outcome.skipped:
                    counts["unchanged"] += 1
                else:
                    counts["uploaded"] += 1
                progress.update(task, advance=1, note=f"[red]{counts['failed']} failed[/] "
                                                      f"{counts['unchanged']} unchanged")

            outcomes = await client.upload_files(args.entity, files, concurrency=args.concurrency,
                                                 skip_unchanged=not args.force, source=args.source, tags=tags,
                                                 collection=args.collection, bulk=not args.no_bulk,
                                                 on_result=on_result)
            upload_seconds = time.perf_counter() - started
            progress.stop_task(task)  # its rate is then over the upload's time only
            ingest = None
            if args.wait:
                sent = {o.document_id: o.document.version for o in outcomes if o.ok and not o.skipped}
                ingest = await _wait_ingested(client, args.entity, sent, progress, timeout=args.wait_timeout)
        total_seconds = time.perf_counter() - started

    summary = {"entity_id": args.entity, "files": len(files), **counts, "bytes": total_bytes,
               "upload_seconds": round(upload_seconds, 2),
               "documents_per_second": round(len(files) / upload_seconds, 1) if upload_seconds else None,
               "failures": [{"path": p, "error": e} for p, e in failures]}
    if ingest is not None:
        # uploads and ingestion overlap: ready documents over the whole time is the end-to-end rate
        summary.update(ingest, total_seconds=round(total_seconds, 2),
                       ready_per_second=round(ingest["ready"] / total_seconds, 1) if total_seconds else None)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        table = Table(title=f"upload to {args.entity}", show_header=False)
        for key in ("files", "uploaded", "unchanged", "failed", "bytes", "upload_seconds", "documents_per_second",
                    "ready", "ingest_failed", "not_ready", "ready_per_second", "total_seconds"):
            if key in summary:
                table.add_row(key.replace("_", " "), f"{summary[key]:,}" if isinstance(summary[key], int)
                              else str(summary[key]))
        console.print(table)
        for path, error in failures[:20]:
            console.print(f"[red]failed[/] {path}: {error}")
        if len(failures) > 20:
            console.print(f"... and {len(failures) - 20} more failures")
    return 1 if counts["failed"] or (ingest and (ingest["ingest_failed"] or ingest["not_ready"])) else 0


async def _wait_ingested(client, entity_id: str, sent: dict[str, int], progress, *, timeout: float) -> dict:
    """Until every uploaded document is ready or failed, polling only what is unfinished.

    Each round lists the entity's pending and processing documents (a list that shrinks as
    ingestion goes on), so polling costs grow with what is left, not with the entity's size;
    the pause between rounds grows with it too. Failures are read once at the end."""
    task = progress.add_task("ingesting", total=len(sent), note="")
    started = time.perf_counter()
    deadline = started + timeout
    remaining = set(sent)
    while remaining and time.perf_counter() < deadline:
        unfinished: set[str] = set()
        for status in ("pending", "processing"):
            async for doc in client.iter_documents(entity_id, status=status, page_size=1000):
                unfinished.add(doc.document_id)
        remaining &= unfinished
        progress.update(task, completed=len(sent) - len(remaining))
        if remaining:
            await asyncio.sleep(min(10.0, 0.5 + len(remaining) / 1000))
    failed = {d.document_id async for d in client.iter_documents(entity_id, status="failed", page_size=1000)
              if d.document_id in sent and d.document_id not in remaining}
    progress.update(task, note=f"[red]{len(failed)} failed[/]")
    seconds = time.perf_counter() - started
    return {"ready": len(sent) - len(remaining) - len(failed), "ingest_failed": len(failed),
            "not_ready": len(remaining), "ingest_wait_seconds": round(seconds, 2)}


# --- search ----------------------------------------------------------------------------------------

def _collections(values: list[str] | None) -> list[str] | str | None:
    names = _split(values)
    return "auto" if names == ["auto"] else names


def cmd_search(args) -> int:
    from rich.markup import escape
    from rich.table import Table

    filters = {k: v for k, v in {"tags": _split(args.tag), "sources": _split(args.source),
                                 "document_ids": _split(args.document)}.items() if v}
    include = {"neighbours": args.neighbours, "summary": args.summary or None}
    with Target(args).client() as client:
        answer = client.search(args.query, entity_ids=_split(args.entity), k=args.k, alpha=args.alpha,
                               fusion=args.fusion, text_mode=args.text_mode, rerank=args.rerank or None,
                               dedupe=args.dedupe or None, cache=False if args.no_cache else None,
                               filters=filters or None, include={k: v for k, v in include.items() if v},
                               collections=_collections(args.collection), trajectory=args.trajectory,
                               seen=args.seen, as_of=args.as_of)
    if args.json:
        _dump(answer)
        return 0
    console = _console()
    # Stored text is shown as written: rich would read "[workers.search]" as a markup tag and drop it.
    table = Table(title=escape(f"{args.query!r}: {answer.count} results, {answer.took_ms:g} ms, cache {answer.cache}"),
                  show_lines=True)
    for name, style in (("#", "dim"), ("score", "bold"), ("vector", ""), ("text", ""), ("trigram", ""),
                        ("document", "cyan"), ("passage", "")):
        table.add_column(name, style=style, overflow="fold", justify="right" if name in (
            "#", "score", "vector", "text", "trigram") else "left")
    for rank, r in enumerate(answer.results, 1):
        text = " ".join((r.text or "").split())
        snippet = shorten(text, SNIPPET_CHARS)
        title = f"{r.document_id}" + (f"\n{r.document.title}" if r.document.title else "")
        table.add_row(str(rank), f"{r.score:.3f}", f"{r.scores.vector:.3f}", f"{r.scores.text:.3f}",
                      f"{r.scores.trigram:.3f}", escape(title), escape(snippet))
    console.print(table)
    if step := answer.trajectory:
        console.print(f"trajectory {escape(step.id)}: step {step.step}, novelty {step.novelty['chunks']:.2f} of chunks "
                      f"and {step.novelty['documents']:.2f} of documents, {step.left_out} left out, "
                      f"{step.tokens['total']} tokens so far")
    if answer.corrections:
        console.print(escape("corrections: " + ", ".join(f"{w} → {', '.join(t)}"
                                                         for w, t in answer.corrections.items())))
    return 0


# --- trajectories ------------------------------------------------------------------------------------

def cmd_trajectory(args) -> int:
    from rich.markup import escape
    from rich.table import Table

    with Target(args).client() as client:
        t = client.trajectory(args.id)
        if args.action == "delete":
            t.delete()
            if not args.json:
                _console().print(f"trajectory {escape(args.id)} deleted")
            else:
                _dump({"id": args.id, "deleted": True})
            return 0
        grounding = t.grounding()
    if args.json:
        _dump(grounding)
        return 0
    console = _console()
    table = Table(title=escape(f"trajectory {grounding.id}: {grounding.steps} steps, {len(grounding.chunks)} chunks, "
                               f"{grounding.tokens} tokens"))
    for name in ("step", "query", "returned", "novelty"):
        table.add_column(name, justify="right" if name in ("step", "returned", "novelty") else "left")
    for q in grounding.queries:
        table.add_row(str(q["step"]), escape(q["query"]), str(q["returned"]), f"{q['novelty']['chunks']:.2f}")
    console.print(table)
    for d in grounding.documents:
        console.print(escape(f"{d['entity_id']}/{d['document_id']}" + (f": {d['title']}" if d.get("title") else "")
                             + ("" if d["current"] else " (deleted since)")))
    return 0


# --- document history --------------------------------------------------------------------------------

def cmd_changes(args) -> int:
    from rich.markup import escape

    with Target(args).client() as client:
        changes = client.changes(args.entity, args.document, since=args.since, until=args.until)
    if args.json:
        _dump(changes)
        return 0
    console = _console()
    since = "nothing" if changes.since_version is None else f"version {changes.since_version}"
    console.print(escape(f"{args.entity}/{args.document}: {since} → version {changes.until_version}: "
                         f"{len(changes.added)} added, {len(changes.removed)} removed, {len(changes.changed)} "
                         f"changed, {changes.unchanged} unchanged ({changes.moved} moved)"))
    for mark, chunks in (("+", changes.added), ("-", changes.removed)):
        for c in chunks:
            console.print(escape(f"{mark} [{c.position}] {shorten(' '.join(c.text.split()), SNIPPET_CHARS)}"))
    for c in changes.changed:
        before = c.previous.text if c.previous is not None else ""
        console.print(escape(f"~ [{c.position}] {shorten(' '.join(before.split()), SNIPPET_CHARS)}"))
        console.print(escape(f"  → {shorten(' '.join(c.text.split()), SNIPPET_CHARS)}"))
    return 0


# --- status ------------------------------------------------------------------------------------------

def cmd_status(args) -> int:
    from edgeindex_client import Client
    from rich.table import Table

    target = Target(args)
    console = _console()
    if args.entity and args.document:
        with target.client() as client:
            doc = client.get_document(args.entity, args.document)
        if args.json:
            _dump(doc)
        else:
            table = Table(title=f"{args.entity}/{args.document}", show_header=False)
            for key, value in doc.model_dump(exclude_none=True).items():
                table.add_row(key, str(value) if key != "summary" else str(value)[:300])
            console.print(table)
        return 0 if doc.status != "failed" else 1
    if args.entity:
        counts: dict[str, int] = {}
        failed = []
        with target.client() as client:
            for doc in client.iter_documents(args.entity, page_size=1000):
                counts[doc.status] = counts.get(doc.status, 0) + 1
                if doc.status == "failed":
                    failed.append((doc.document_id, doc.step, doc.error))
        if args.json:
            print(json.dumps({"entity_id": args.entity, "documents": counts,
                              "failed": [{"document_id": d, "step": s, "error": e} for d, s, e in failed]}, indent=2))
            return 0
        table = Table(title=f"documents of {args.entity}")
        table.add_column("status")
        table.add_column("documents", justify="right")
        for status in ("pending", "processing", "ready", "failed"):
            table.add_row(status, f"{counts.get(status, 0):,}")
        console.print(table)
        for document_id, step, error in failed[:20]:
            console.print(f"[red]failed[/] {document_id} at {step}: {error}")
        return 0
    workers = {"upload": target.upload_url, "ingest": target.ingest_url, "search": target.search_url,
               "mcp": target.mcp_url}
    rows = []
    for name, url in workers.items():
        if not url:
            continue
        try:
            with Client(target.api_key, base_url=url, timeout=5, max_retries=0) as client:
                health = client.health()
            rows.append({"worker": name, "url": url, "status": health.get("status"),
                         "uptime_seconds": health.get("uptime_seconds"), "routes": len(health.get("routes", [])),
                         "consumers": health.get("consumers", [])})
        except Exception as exc:
            rows.append({"worker": name, "url": url, "status": f"unreachable: {exc}"})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        table = Table(title="edgeindex workers")
        for col in ("worker", "url", "status", "uptime", "routes", "queue batches"):
            table.add_column(col)
        for row in rows:
            batches = ", ".join(f"{c['queue']}: {c['batches']}" for c in row.get("consumers", []))
            table.add_row(row["worker"], row["url"], str(row["status"]), str(row.get("uptime_seconds", "")),
                          str(row.get("routes", "")), batches)
        console.print(table)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


# --- keys and entities -----------------------------------------------------------------------------

def cmd_keys(args) -> int:
    from rich.table import Table

    with Target(args).client() as client:
        if args.action == "create":
            key = client.create_key(args.name, _split(args.entity) or [], admin=args.admin)
            if args.json:
                _dump(key)
            else:
                _console().print(f"key [bold]{key.id}[/] for {', '.join(key.entity_ids) or '(admin)'}:\n{key.key}\n"
                                 "[dim](shown once; store it now)[/]")
            return 0
        if args.action == "revoke":
            _dump(client.revoke_key(args.key_id)) if args.json else client.revoke_key(args.key_id)
            if not args.json:
                _console().print(f"revoked {args.key_id}")
            return 0
        keys = client.list_keys()
    if args.json:
        _dump(keys)
        return 0
    table = Table(title="API keys")
    for col in ("id", "name", "entities", "admin", "created", "revoked"):
        table.add_column(col)
    for k in keys:
        if k.revoked_at and not args.all:
            continue
        table.add_row(k.id, k.name, ", ".join(k.entity_ids), "yes" if k.is_admin else "",
                      f"{k.created_at:%Y-%m-%d %H:%M}" if k.created_at else "",
                      f"{k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "")
    _console().print(table)
    return 0


def cmd_entities(args) -> int:
    from rich.table import Table

    with Target(args).client() as client:
        if args.action == "create":
            entity = client.create_entity(args.id, args.kind, name=args.name)
            _dump(entity) if args.json else _console().print(f"created {entity.kind} {entity.id}")
            return 0
        entities = client.list_entities()
    if args.json:
        _dump(entities)
        return 0
    table = Table(title="entities")
    for col in ("id", "kind", "name", "created"):
        table.add_column(col)
    for e in entities:
        table.add_row(e.id, e.kind, e.name, f"{e.created_at:%Y-%m-%d %H:%M}" if e.created_at else "")
    _console().print(table)
    return 0


# --- registration --------------------------------------------------------------------------------------

def _connection(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument("--url", help="one address for every route (a gateway); default $EDGEINDEX_URL")
    group.add_argument("--upload-url", help="upload worker (default: wrangler.toml's port on 127.0.0.1)")
    group.add_argument("--search-url", help="search worker (default: wrangler.toml's port on 127.0.0.1)")
    group.add_argument("--api-key", help="default $EDGEINDEX_API_KEY, then the dev stack's admin key")
    group.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    group.add_argument("--json", action="store_true", help="print JSON instead of tables")


def register(sub) -> None:
    """Add the client commands to ``edgeindex``'s subcommands (shared/cli.py)."""
    up = sub.add_parser("upload", help="upload files, folders and globs as documents, with live progress")
    up.add_argument("paths", nargs="+", help="files, folders (walked) or globs ('docs/**/*.md')")
    up.add_argument("--entity", required=True, help="the entity the documents belong to")
    up.add_argument("--pattern", help="inside folders, only names matching this glob (e.g. '*.md')")
    up.add_argument("--prefix", help="prepend to every document id")
    up.add_argument("--concurrency", type=int, default=16, help="uploads in flight (default 16)")
    up.add_argument("--tags", action="append", help="tags for every document (comma-separated, repeatable)")
    up.add_argument("--source", help="source label for every document")
    up.add_argument("--collection", help="the collection every document joins (index selection, search's collections)")
    up.add_argument("--force", action="store_true", help="upload even files whose bytes the server has already")
    up.add_argument("--no-bulk", action="store_true",
                    help="one request per file (default: files up to 256 KiB go many to a request)")
    up.add_argument("--hidden", action="store_true", help="include dot files and folders")
    up.add_argument("--wait", action="store_true", help="then wait until every uploaded document is ingested")
    up.add_argument("--wait-timeout", type=float, default=3600.0)
    up.add_argument("--create-entity", action="store_true", help="create the entity first if missing (admin key)")
    up.add_argument("--kind", default="user", choices=["user", "group", "network", "community"])
    _connection(up)
    up.set_defaults(func=cmd_upload)

    se = sub.add_parser("search", help="search and print a table of results (--json for the raw answer)")
    se.add_argument("query")
    se.add_argument("--entity", action="append", help="entities to search (comma-separated, repeatable; "
                                                      "default: all the key is granted)")
    se.add_argument("-k", type=int, default=None, help="results (server default 10)")
    se.add_argument("--alpha", type=float, help="1 = vector only, 0 = full text only")
    se.add_argument("--fusion", choices=["linear", "rrf"])
    se.add_argument("--text-mode", choices=["any", "websearch"])
    se.add_argument("--tag", action="append", help="filter: any of these tags")
    se.add_argument("--source", action="append", help="filter: any of these sources")
    se.add_argument("--document", action="append", help="filter: only these document ids")
    se.add_argument("--neighbours", type=int, default=0, help="neighbouring chunks per hit")
    se.add_argument("--summary", action="store_true", help="include document summaries")
    se.add_argument("--rerank", action="store_true")
    se.add_argument("--dedupe", action="store_true", help="one result per document")
    se.add_argument("--no-cache", action="store_true")
    se.add_argument("--collection", action="append", help="only these collections (comma-separated, repeatable), "
                                                          "or 'auto': the ones index selection chooses")
    se.add_argument("--trajectory", metavar="ID", help="a step of this trajectory: what it returned before is "
                                                       "left out (created on first use)")
    se.add_argument("--seen", choices=["exclude", "include", "mark"], help="with --trajectory: what to do with "
                                                                           "chunks it returned before")
    se.add_argument("--as-of", metavar="TIME", help="the documents as they were at this ISO 8601 time "
                                                    "(document history)")
    _connection(se)
    se.set_defaults(func=cmd_search)

    ch = sub.add_parser("changes", help="what changed in a document since a version or time, chunk by chunk")
    ch.add_argument("entity")
    ch.add_argument("document")
    ch.add_argument("--since", required=True, help="a version number or an ISO 8601 time")
    ch.add_argument("--until", help="a version number or time (default: the live version)")
    _connection(ch)
    ch.set_defaults(func=cmd_changes)

    tr = sub.add_parser("trajectory", help="what a trajectory touched (its queries and documents), or delete it")
    tr.add_argument("action", choices=["show", "delete"])
    tr.add_argument("id")
    _connection(tr)
    tr.set_defaults(func=cmd_trajectory)

    st = sub.add_parser("status", help="workers' health; with --entity its documents by status; "
                                       "with --document one document")
    st.add_argument("--entity")
    st.add_argument("--document")
    _connection(st)
    st.set_defaults(func=cmd_status)

    keys = sub.add_parser("keys", help="API keys (admin key)")
    key_sub = keys.add_subparsers(dest="action", required=True)
    kc = key_sub.add_parser("create", help="a new key; its secret is printed once")
    kc.add_argument("name")
    kc.add_argument("--entity", action="append", help="granted entities (comma-separated, repeatable)")
    kc.add_argument("--admin", action="store_true")
    _connection(kc)
    kl = key_sub.add_parser("list")
    kl.add_argument("--all", action="store_true", help="revoked keys too")
    _connection(kl)
    kr = key_sub.add_parser("revoke")
    kr.add_argument("key_id")
    _connection(kr)
    keys.set_defaults(func=cmd_keys)

    ents = sub.add_parser("entities", help="tenants: users, groups, networks, communities (admin key)")
    ent_sub = ents.add_subparsers(dest="action", required=True)
    ec = ent_sub.add_parser("create")
    ec.add_argument("id")
    ec.add_argument("--kind", default="user", choices=["user", "group", "network", "community"])
    ec.add_argument("--name")
    _connection(ec)
    el = ent_sub.add_parser("list")
    _connection(el)
    ents.set_defaults(func=cmd_entities)


def client_error_message(exc: BaseException) -> str | None:
    """A one-line message for the SDK's errors (None for anything else)."""
    try:
        from edgeindex_client import EdgeIndexClientError
    except ImportError:
        return None
    if isinstance(exc, EdgeIndexClientError):
        return str(exc)
    return None
