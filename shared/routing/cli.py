"""``edgeindex router train | show | rollback | report``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from ..errors import ValidationError

TRAIN_EPILOG = """\
Without --upload-url/--search-url a fresh stack is started (as for `edgeindex eval`); each
--dataset is ingested and every judged query asked once per strategy bin. --save keeps the
per-query rows, --data reuses them (no stack). The fitted model is stored as a new version in
the deployment's Postgres when --dsn is given ($EDGEINDEX_DATABASE_URL), written to --out as JSON
otherwise (shared/routing/default_model.json is the built-in model).

example: edgeindex router train --dataset ../shared/data/msmarco --dataset ../shared/data/xquad-de \\
             --save training.json --leave-one-out
"""


def register(subparsers) -> None:
    router = subparsers.add_parser("router", help="the adaptive retrieval router: train, show, rollback, report")
    sub = router.add_subparsers(dest="router_command", required=True)

    train = sub.add_parser("train", help="fit the router from BEIR qrels through the real stack",
                           epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("--dataset", action="append", default=[], help="BEIR folder (repeat for several)")
    train.add_argument("--data", action="append", type=Path, default=[],
                       help="per-query rows saved by an earlier --save (no stack needed)")
    train.add_argument("--save", type=Path, help="write the per-query rows here")
    train.add_argument("--out", type=Path, help="write the fitted model here as JSON")
    train.add_argument("--leave-one-out", action="store_true",
                       help="also train on all datasets but one and score on that one, for each")
    train.add_argument("--l2", type=float, help="L2 penalty of the fit (default: edgeindex.evaluation.router_training.L2)")
    train.add_argument("--switch-cost", type=float,
                       help="prior toward the fixed blend: extra reward of its bin in the fit "
                            "(default: edgeindex.evaluation.router_training.SWITCH_COST)")
    train.add_argument("--decision", choices=("alpha", "bin"),
                       help="a continuous alpha per query, or one of --bins (default: "
                            "edgeindex.evaluation.router_training.DECISION)")
    train.add_argument("--bins", help="comma-separated alphas: the bins the model chooses among, or whose "
                       "softmax mean is the continuous alpha (0 = text, 1 = vector)")
    train.add_argument("--features", help="comma-separated feature names to fit on (default: "
                                          "edgeindex.evaluation.router_training.FEATURES)")
    train.add_argument("--k", type=int, default=10)
    train.add_argument("--upload-url")
    train.add_argument("--search-url")
    train.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY", ""))
    train.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""),
                       help="the deployment's Postgres: store the model as a new serving version")
    train.add_argument("--entity-for", action="append", default=[], metavar="DATASET=ENTITY",
                       help="with a running stack: this entity already holds that dataset")
    train.add_argument("--no-store", action="store_true", help="with --dsn: do not store a version")
    train.set_defaults(func=cmd_train)

    show = sub.add_parser("show", help="print the serving weights and the version history")
    show.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""))
    show.add_argument("--entity", default="", help="an entity's override (default: the deployment's model)")
    show.add_argument("--builtin", action="store_true", help="the package's built-in model instead")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)

    rollback = sub.add_parser("rollback", help="serve an earlier version again (default: the previous one)")
    rollback.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""))
    rollback.add_argument("--entity", default="")
    rollback.add_argument("--to", type=int, help="the version to serve")
    rollback.set_defaults(func=cmd_rollback)

    report = sub.add_parser("report", help="strategy mix, regret and latency from the telemetry; PNG charts")
    report.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""))
    report.add_argument("--days", type=int, default=30)
    report.add_argument("--out", type=Path, help="folder for summary.json and the charts")
    report.set_defaults(func=cmd_report)


def _dsn(args) -> str:
    if not args.dsn:
        raise ValidationError("give --dsn (or set EDGEINDEX_DATABASE_URL): the deployment's Postgres", field="dsn")
    return args.dsn


async def _with_db(dsn: str, work):
    from ..bindings.database import Database

    db = Database(dsn, min_size=1, max_size=2, name="ROUTER")
    await db.open()
    try:
        return await work(db)
    finally:
        await db.close()


def cmd_train(args) -> int:
    from ..evaluation import beir
    from ..evaluation import router_training as train
    from . import store

    collected = [row for path in args.data for row in train.load(path)]
    if args.dataset:
        collected += _collect(args, [beir.load(d) for d in args.dataset])
    if not collected:
        raise ValidationError("give --dataset (BEIR folder) or --data (saved rows)", field="dataset")
    if args.save:
        train.save(collected, args.save)
        print(f"wrote {args.save}")
    fit_args = _fit_args(args)
    if args.leave_one_out and len(collected) > 1:
        print("\nleave-one-dataset-out (NDCG@10; trained on the others, scored on this one):")
        for name, result in train.leave_one_out(collected, **fit_args).items():
            print(f"  {name}: " + json.dumps(result))
    model = train.fit(collected, **fit_args)
    print("\nin-sample (trained on all):")
    for data in collected:
        print(f"  {data['dataset']}: " + json.dumps(train.score(model, data)))
    print()
    print(model.table())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n")
        print(f"wrote {args.out}")
    if args.dsn and not args.no_store:
        async def add(db):
            current = await store.active(db)
            return await store.add(db, model, source="train", parent=current.version if current else None,
                                   note=f"trained on {model.meta['trained_on']}")
        version = asyncio.run(_with_db(args.dsn, add))
        print(f"stored and serving: router model version {version}")
    return 0


def _fit_args(args) -> dict:
    from .features import NAMES

    out = {}
    if args.l2 is not None:
        out["l2"] = args.l2
    if args.switch_cost is not None:
        out["switch_cost"] = args.switch_cost
    if args.bins:
        out["bins"] = _bins(args.bins)
    if args.decision:
        out["decision"] = args.decision
    if args.features:
        features = [f.strip() for f in args.features.split(",") if f.strip()]
        unknown = [f for f in features if f not in NAMES]
        if unknown or not features:
            raise ValidationError(f"unknown features {unknown}; known: {', '.join(NAMES)}", field="features")
        out["features"] = tuple(features)
    return out


def _collect(args, datasets) -> list[dict]:
    from .. import config as config_module
    from ..evaluation import router_training as train
    from ..evaluation.stack import Endpoints, fresh_stack

    entities = dict(item.split("=", 1) for item in args.entity_for)

    config_path = Path(args.config) if getattr(args, "config", None) else config_module.find_config()
    model = "" if args.upload_url else config_module.load(config_path).services.ai.model

    async def run(endpoints):
        out = []
        for dataset in datasets:
            out.append(await train.collect(dataset, endpoints, k=args.k, entity=entities.get(dataset.name),
                                           model=model, progress=lambda m: print(m, flush=True)))
            if args.save:  # keep what is done so far
                train.save(out, args.save)
        return out

    if args.upload_url or args.search_url:
        if not (args.upload_url and args.search_url and args.admin_key):
            raise ValidationError("a running stack needs --upload-url, --search-url and --admin-key together",
                                  field="upload_url")
        return asyncio.run(run(Endpoints(args.upload_url, args.search_url, args.admin_key, args.dsn)))
    with fresh_stack(config_path, progress=lambda m: print(m, flush=True)) as endpoints:
        return asyncio.run(run(endpoints))


def cmd_show(args) -> int:
    from . import store
    from .model import RouterModel

    if args.builtin:
        model, history = RouterModel.builtin(), []
        header = "built-in model"
    else:
        async def read(db):
            return await store.active(db, args.entity), await store.versions(db, args.entity)
        active, history = asyncio.run(_with_db(_dsn(args), read))
        if active is None:
            print(f"no router model serves {args.entity or 'the deployment'} (the built-in one will at start-up)")
            return 1
        model = active.model
        header = f"serving version {active.version} ({args.entity or 'deployment'})"
    if args.json:
        print(json.dumps({"model": model.to_json(), "versions": [
            {k: (str(v) if k == "created_at" else v) for k, v in h.items()} for h in history]}, indent=1))
        return 0
    print(header + (f" — {json.dumps(model.meta)}" if model.meta else ""))
    bins = ", ".join(f"{n} (alpha {a:g})" for n, a in model.bins)
    if model.decision == "alpha":
        print(f"a continuous alpha per query: the softmax's mean over {bins}")
    else:
        print(f"bins: {bins}; the fixed blend is {model.bins[model.default_bin][0]}")
    print(model.table())
    if history:
        print("\nversions (newest first):")
        for h in history:
            print(f"  {h['version']:>5} {h['source']:<9} parent {h['parent'] or '-':<5} base {h['base'] or '-':<5}"
                  f" {h['created_at']:%Y-%m-%d %H:%M:%S} {'SERVING ' if h['active'] else ''}{h['note']}")
    return 0


def cmd_rollback(args) -> int:
    from . import store

    async def roll(db):
        return await store.rollback(db, scope=args.entity, to=args.to)
    version = asyncio.run(_with_db(_dsn(args), roll))
    print(f"rolled back: version {version} now serves {args.entity or 'the deployment'} "
          "(search workers pick it up within ROUTER refresh, 5 s)")
    return 0


def cmd_report(args) -> int:
    from . import report

    data = asyncio.run(_with_db(_dsn(args), lambda db: report.summary(db, days=args.days)))
    print(report.format_summary(data))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.json").write_text(json.dumps(data, indent=1) + "\n")
        for path in [args.out / "summary.json", *report.charts(data, args.out)]:
            print(f"wrote {path}")
    return 0


def _bins(text: str) -> tuple[tuple[str, float], ...]:
    from .model import bin_name

    try:
        alphas = sorted({float(a) for a in text.split(",") if a.strip()})
    except ValueError:
        raise ValidationError(f"bins are alphas between 0 and 1, got {text!r}", field="bins") from None
    if len(alphas) < 2 or not all(0 <= a <= 1 for a in alphas):
        raise ValidationError(f"give two or more alphas between 0 and 1, got {text!r}", field="bins")
    return tuple((bin_name(a), a) for a in alphas)
