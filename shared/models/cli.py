"""``edgeindex models status | backfill | cutover | rollback | migrate | compare | drop``: a second
embedding model's vectors beside the serving one, comparing the two, and changing which one serves."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from pathlib import Path

BACKFILL_EPILOG = """\
Embeds every stored chunk (or --entity's) with MODEL, a packaged local model, and stores the vectors
beside the serving model's. It works --duty of the time and rests the rest, so searches keep their
latency; Ctrl-C stops it after the batch in hand, and running it again goes on from there.

example: edgeindex models backfill --to multilingual-e5-small
"""
CUTOVER_EPILOG = """\
Makes MODEL the serving model in one commit: chunks its backfill did not reach are embedded first
(at full speed), the serving vectors are kept beside for `edgeindex models rollback`, the tool and
index catalogues are embedded again with MODEL and written in the same commit, and running
workers load MODEL and switch within seconds, answering all the while. Writes of new chunks wait
for the commit; searches do not.

With --entity (repeat), only those entities' chunks move to MODEL: they are served by it from then
on (searches of them embed with it, their new documents are embedded with it), every other entity
and the catalogues stay on the deployment's model. `edgeindex models rollback --entity` returns them.

examples: edgeindex models cutover --to multilingual-e5-small
          edgeindex models cutover --to multilingual-e5-small --entity acme
"""
ROLLBACK_EPILOG = """\
Serves the model the last cutover replaced again, from the vectors that cutover kept (chunks written
since are embedded first). With --entity, those entities return to the deployment's model.

examples: edgeindex models rollback
          edgeindex models rollback --entity acme
"""
MIGRATE_EPILOG = """\
A backfill (throttled by --duty, resumable) and then a cutover: the one command for changing models.
Check the new model on your own judged queries first with `edgeindex eval --compare model:MODEL`.

example: edgeindex models migrate --to multilingual-e5-small
"""
COMPARE_EPILOG = """\
Ranks, for each search an agent sent feedback for (POST /feedback), every chunk of its entities by
the serving model's vectors alone and by MODEL's (backfilled), and scores both rankings against the
chunks marked useful: NDCG@k, Recall@k and MRR, with MODEL's difference per query (a 95% bootstrap
interval) and the searches each model ranks better. The useful chunks come from answers the serving
model helped rank, so the figures lean its way.

example: edgeindex models compare multilingual-e5-small
"""
EPILOGS = {"backfill": BACKFILL_EPILOG, "cutover": CUTOVER_EPILOG, "rollback": ROLLBACK_EPILOG, "migrate": MIGRATE_EPILOG,
           "compare": COMPARE_EPILOG}


def register(subparsers) -> None:
    models = subparsers.add_parser("models", help="embedding models: status, backfill another model, cut over to "
                                   "it, roll back, drop its vectors")
    sub = models.add_subparsers(dest="models_command", required=True)
    for name, help_text in (("status", "the serving model and each other model's vectors"),
                            ("backfill", "embed the stored chunks with another model, beside the serving one"),
                            ("cutover", "make another (backfilled) model the serving one"),
                            ("rollback", "serve the model the last cutover replaced again"),
                            ("migrate", "backfill, then cut over"),
                            ("compare", "a backfilled model against the serving one on the deployment's feedback"),
                            ("drop", "delete another model's vectors")):
        command = sub.add_parser(name, help=help_text, epilog=EPILOGS.get(name),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""),
                             help="the deployment's Postgres (default $EDGEINDEX_DATABASE_URL, then wrangler.toml's)")
        command.add_argument("--json", action="store_true", help="print the result as JSON")
        command.set_defaults(func=_command(name))
    for name in ("backfill", "cutover", "migrate"):
        sub.choices[name].add_argument("--to", required=True, metavar="MODEL", help="the model to embed with "
                                       "(all-MiniLM-L6-v2 or multilingual-e5-small)")
        sub.choices[name].add_argument("--batch", type=int, default=None, help="chunks per model call (default 64)")
    sub.choices["backfill"].add_argument("--entity", action="append", metavar="ENTITY",
                                         help="only this entity's chunks (repeat)")
    for name in ("cutover", "rollback"):
        sub.choices[name].add_argument("--entity", action="append", metavar="ENTITY",
                                       help="only this entity (repeat); the others stay on the deployment's model")
    for name in ("backfill", "migrate"):
        sub.choices[name].add_argument("--duty", type=float, default=None,
                                       help="share of the time the backfill works (default 0.5)")
    sub.choices["drop"].add_argument("model", help="the model whose vectors to delete")
    sub.choices["compare"].add_argument("model", help="the backfilled model to compare with the serving one")
    sub.choices["compare"].add_argument("--k", type=int, default=10, help="the depth scored (default 10)")
    sub.choices["compare"].add_argument("--limit", type=int, default=1000,
                                        help="the latest searches with feedback to use (default 1000)")


def _command(name: str):
    def run(args) -> int:
        return asyncio.run(_run(name, args))
    return run


async def _run(name: str, args) -> int:
    from ..bindings.database import Database
    from . import backfill as backfills

    db = Database(_dsn(args), min_size=1, max_size=2, name="MODELS")
    await db.open()
    try:
        if name == "status":
            from .cutover import history
            from .jobs import recent

            result = {**await backfills.status(db), "cutovers": await history(db), "jobs": await recent(db)}
            _print(result, args.json, _status_lines(result))
        elif name == "drop":
            model_id = backfills.stored_model_id(args.model)
            deleted = await backfills.drop(db, model_id)
            _print({"model_id": model_id, "deleted": deleted}, args.json, [f"deleted {deleted} vectors of {model_id}"])
        elif name == "compare":
            from ..bindings.ai import local_embedder, local_model
            from .compare import compare

            serving, _ = await backfills.serving_model(db)
            embedders = [await asyncio.to_thread(local_embedder, 64, local_model(m).name) for m in (serving, args.model)]
            result = await compare(db, *embedders, k=args.k, limit=args.limit)
            _print(result, args.json, _compare_lines(result))
        elif name in ("cutover", "rollback"):
            from ..bindings.ai import stored_chunks_embedder
            from .cutover import cutover, rollback_model

            target = args.to if name == "cutover" else await rollback_model(db, args.entity)
            embedder = await asyncio.to_thread(stored_chunks_embedder, target)
            options = {"batch": args.batch} if getattr(args, "batch", None) else {}
            done = await cutover(db, embedder, rollback=name == "rollback", entity_ids=args.entity, **options)
            result = done.as_dict()
            _print(result, args.json, [_cutover_line(done)])
        else:
            from ..bindings.ai import stored_chunks_embedder

            embedder = await asyncio.to_thread(stored_chunks_embedder, args.to)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGINT, stop.set)
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            options = {k: v for k, v in (("batch", args.batch), ("duty", args.duty)) if v is not None}
            progress = await backfills.backfill(db, embedder, entity_ids=getattr(args, "entity", None),
                                                should_stop=stop.is_set,
                                                **options)
            result = progress.as_dict()
            verb = "stopped after" if progress.stopped else "done:"
            lines = [f"{progress.model_id}: {verb} {progress.embedded} chunks embedded "
                     f"({result['chunks_per_second']} chunks/s while working)"]
            if name == "migrate" and not progress.stopped:
                from .cutover import cutover

                done = await cutover(db, embedder, **({"batch": args.batch} if args.batch else {}))
                result = {"backfill": result, "cutover": done.as_dict()}
                lines.append(_cutover_line(done))
            _print(result, args.json, lines)
        return 130 if name in ("backfill", "migrate") and result.get("stopped") else 0
    finally:
        await db.close()


def _cutover_line(done) -> str:
    verb = "rolled back to" if done.rollback else "now serving"
    if done.entity_ids:
        verb += f" {', '.join(done.entity_ids)} with"
    catalogues = ", ".join(f"{n} {kind}" for kind, n in done.catalogues.items() if n) or "none"
    return (f"{verb} {done.to_model} (was {done.from_model}): {done.chunks} chunks, "
            f"{done.embedded_before + done.embedded_during} embedded to catch up; catalogue vectors re-embedded: "
            f"{catalogues}; writes held {done.locked_seconds:.2f} s")


def _compare_lines(result: dict) -> list[str]:
    serving, other = result["serving_model"], result["model"]
    if not result["queries"]:
        return [f"no search with feedback to compare on ({result['left_out']} left out: no vectors of {other} "
                "for their entities)"]
    lines = [f"{result['queries']} searches with feedback ({result['relevant_per_query']} useful chunks each; "
             f"{result['left_out']} left out), {other} against {serving}:"]
    for metric, d in result["difference"].items():
        lines.append(f"  {metric:<10} {result['models'][serving][metric]:.4f} -> {result['models'][other][metric]:.4f}"
                     f"  ({d['mean']:+.4f}, 95% [{d['low']:+.4f}, {d['high']:+.4f}]; better on {d['better']}, "
                     f"worse on {d['worse']})")
    return lines


def _dsn(args) -> str:
    if args.dsn:
        return args.dsn
    from .. import config as config_module

    return config_module.load(Path(args.config) if args.config else config_module.find_config()).services.database.dsn


def _status_lines(result: dict) -> list[str]:
    serving = result["serving"]
    lines = [f"serving: {serving['model_id']} (dimension {serving['dimension']})"]
    for m in result["models"]:
        scope = "every entity" if m["entity_ids"] is None else ", ".join(m["entity_ids"])
        lines.append(f"{m['model_id']} (dimension {m['dimension']}, {scope}): {m['state']}, "
                     f"{m['vectors']} of {m['chunks']} chunks ({m['covered']:.1%})")
    for entity, model in result.get("entities", {}).items():
        lines.append(f"entity {entity}: served by {model}")
    for sh in result.get("shadow", []):
        lines.append(f"shadow {sh['shadow_model']} beside {sh['serving_model']}: {sh['searches']} searches, "
                     f"{sh['overlap']:.1%} of the served chunks in its top k (p50 {sh['shadow_ms_p50']} ms)")
    for c in result.get("cutovers", []):
        scope = f" of {', '.join(c['entity_ids'])}" if c.get("entity_ids") else ""
        lines.append(f"{c['at']}: {'rollback' if c['rollback'] else 'cutover'}{scope} {c['from_model']} -> "
                     f"{c['to_model']} ({c['chunks']} chunks)")
    for j in result.get("jobs", []):
        lines.append(f"job {j['id']} ({j['created_at']}): {j['action']} {j['model_id']}: {j['state']}"
                     + (f" ({j['error']})" if j["error"] else ""))
    return lines


def _print(result: dict, as_json: bool, lines: list[str]) -> None:
    print(json.dumps(result) if as_json else "\n".join(lines))
