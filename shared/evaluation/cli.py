"""edgeindex eval: retrieval quality and latency on a BEIR dataset, side by side with baselines.

The runner, the datasets and the baselines are imported when the command runs, so that
``edgeindex --help`` stays fast.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path

from ..errors import ValidationError
from .modes import BASELINES, MODES, parse_sweep, valid_baseline, valid_mode

EPILOG = """\
Without --upload-url/--search-url a fresh stack is started on a temporary state
folder and free ports (embedded Postgres, moto, the three workers) and removed
afterwards. The corpus goes in through the upload worker and the ingest queue;
every judged query goes through POST /search with cache: false, once per mode
(text = alpha 0, vector = alpha 1, hybrid = the worker's default alpha or
--alpha). BM25 (bm25s) always runs as the keyword baseline; --compare chroma adds
Chroma over the very vectors the stack stored; --compare model:multilingual-e5-small
embeds the same chunks with that model (kept beside the serving vectors, see
`edgeindex models`) and adds its dense search and its fusion with BM25.

example: edgeindex eval --dataset ../shared/data/msmarco --compare chroma --out eval-msmarco
"""


def _csv(choices: tuple[str, ...], option: str, valid=None):
    def parse(text: str) -> tuple[str, ...]:
        values = tuple(v.strip() for v in text.split(",") if v.strip())
        unknown = [v for v in values if not (valid(v) if valid else v in choices)]
        if unknown or not values:
            raise argparse.ArgumentTypeError(f"{option}: expected a comma-separated subset of {','.join(choices)}")
        return values
    return parse


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate retrieval on a BEIR dataset (metrics, latency, baselines)",
                                   description="Retrieval quality and latency on a BEIR dataset, side by side "
                                               "with baselines.", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset",
                        help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), or a name under ../shared/data")
    parser.add_argument("--tools", type=Path, metavar="DIR",
                        help="tool selection instead: DIR holds tools.jsonl and queries.jsonl (see evaluation/selection.py)")
    parser.add_argument("--indices", type=Path, metavar="DIR",
                        help="index selection instead: DIR holds indices.jsonl and queries.jsonl "
                             "(and optionally indices_tables.jsonl / queries_tables.jsonl)")
    parser.add_argument("--trajectory", type=int, metavar="STEPS",
                        help="multi-step retrieval instead: each query and its reformulations as STEPS searches, "
                             "independent and as one trajectory (see evaluation/trajectory_eval.py)")
    parser.add_argument("--split", default="test", help="qrels file to use (default: test)")
    parser.add_argument("--qrels", type=Path, help="judgements to use instead of the dataset's qrels/<split>.tsv")
    parser.add_argument("--k", type=int, default=10, help="cutoff of every metric and results per query (default 10)")
    parser.add_argument("--modes", type=_csv(MODES, "--modes", valid_mode), default=MODES,
                        help="search modes to run: text (alpha 0), vector (alpha 1), hybrid (the fixed blend), "
                             "auto (the router); default (what a request naming no strategy gets) always runs; "
                             "a mode may add query enhancements: text+prf, hybrid+synonyms+hyde, hybrid+none")
    parser.add_argument("--alpha", type=float, help="alpha of the hybrid mode (default: the search worker's)")
    parser.add_argument("--fusion", choices=("linear", "rrf"), help="fusion of every mode (default: the worker's)")
    parser.add_argument("--compare", type=_csv(BASELINES, "--compare", valid_baseline), default=(),
                        help="baselines besides BM25: chroma (same vectors, in-process); model:NAME (the chunks "
                             "embedded with another packaged model beside the serving vectors: dense alone, and "
                             "fused with BM25 by reciprocal rank)")
    parser.add_argument("--no-bm25", action="store_true", help="skip the BM25 baseline")
    parser.add_argument("--sweep", type=parse_sweep, metavar="PARAM=V1,V2,...",
                        help="vary one hybrid parameter, e.g. alpha=0,0.1,...,1 or fusion=linear,rrf")
    parser.add_argument("--repeat", type=int,
                        help="timed passes over the queries per system (rankings come from the first; default: "
                             "enough for 200 latency samples per system, at least 3)")
    parser.add_argument("--out", type=Path, help="folder for results.json and the PNG charts")
    parser.add_argument("--upload-url", help="upload worker of a running stack (skip starting a fresh one)")
    parser.add_argument("--search-url", help="search worker of a running stack")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY", ""),
                        help="admin API key of that stack (default: $EDGEINDEX_ADMIN_KEY)")
    parser.add_argument("--dsn", default=os.environ.get("EDGEINDEX_DATABASE_URL", ""),
                        help="that stack's Postgres, to read vectors back for --compare chroma and model:NAME "
                             "(default: $EDGEINDEX_DATABASE_URL)")
    parser.add_argument("--entity", help="with a running stack: evaluate this entity, which already holds the "
                        "corpus (from an earlier run), instead of uploading it again")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel uploads and status polls (default 8)")
    parser.add_argument("--window", type=int, default=64,
                        help="documents uploaded but not yet ingested at any time (default 64)")
    parser.add_argument("--ingest-timeout", type=float, default=3600.0, help="seconds to wait for ingestion")
    parser.add_argument("--keep-state", action="store_true", help="keep the fresh stack's state folder")
    parser.set_defaults(func=run)


def options_from(args):
    from .runner import Options

    if args.k < 1:
        raise ValidationError("--k must be at least 1", field="k")
    if args.window < 1 or args.concurrency < 1:
        raise ValidationError("--window and --concurrency must be at least 1", field="window")
    if args.repeat is not None and args.repeat < 1:
        raise ValidationError("--repeat must be at least 1", field="repeat")
    if args.alpha is not None and not 0 <= args.alpha <= 1:
        raise ValidationError("--alpha must be within 0..1", field="alpha")
    baselines = tuple(dict.fromkeys([*args.compare, *([] if args.no_bm25 else ["bm25"])]))
    return Options(k=args.k, modes=args.modes, alpha=args.alpha, fusion=args.fusion, baselines=baselines,
                   repeat=args.repeat, sweep=args.sweep, concurrency=args.concurrency, window=args.window,
                   ingest_timeout=args.ingest_timeout, entity=args.entity)


def run(args) -> int:
    if args.tools or args.indices:
        from .selection_cli import run_selection

        return run_selection(args)
    if not args.dataset:
        raise ValidationError("give --dataset (BEIR), --tools DIR or --indices DIR", field="dataset")
    from . import beir, report

    options = options_from(args)
    dataset = beir.load(args.dataset, split=args.split, qrels=args.qrels)
    print(f"dataset {dataset.name}: {len(dataset.corpus)} documents, {len(dataset.judged_queries)} judged queries "
          f"({dataset.path})", flush=True)
    for warning in dataset.warnings:
        print(f"warning: {warning}", flush=True)

    def progress(message: str) -> None:
        print(message, flush=True)

    def on_sigterm(signum, frame):
        # unwind like Ctrl-C, so a fresh stack is stopped and its state folder removed
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if args.trajectory is not None:
            return _trajectory(args, dataset, options, progress)
        results = _evaluate(args, dataset, options, progress)
    finally:
        signal.signal(signal.SIGTERM, previous)

    print()
    print(report.format_table(results))
    if routing := report.format_routing(results):
        print(routing)
    if server := report.format_server_timings(results):
        print(server)
    unanswered = report.unanswered_queries(results)
    if unanswered:
        print(f"\nno system finds any judged document for {len(unanswered)} of {results['dataset']['judged_queries']} "
              f"queries ({', '.join(unanswered[:12])}{', ...' if len(unanswered) > 12 else ''}): "
              "if that is many, check the judgements against the queries")
    if results.get("sweep"):
        print()
        print(f"sweep of {results['sweep']['param']} (hybrid route):")
        print(report.format_sweep(results))
    if args.out:
        for path in report.write(results, args.out):
            print(f"wrote {path}")
    return 0


def _trajectory(args, dataset, options, progress) -> int:
    import json

    from . import trajectory_eval

    if not 2 <= args.trajectory <= 10:
        raise ValidationError("--trajectory takes 2 to 10 steps", field="trajectory")
    results = _evaluate(args, dataset, options, progress,
                        lambda d, e, o, p: trajectory_eval.evaluate(d, e, o, args.trajectory, p))
    print()
    print(trajectory_eval.format_table(results))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "trajectory.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out / 'trajectory.json'}")
    return 0


def _evaluate(args, dataset, options, progress, evaluate=None) -> dict:
    from .. import config as config_module
    from .runner import evaluate as evaluate_modes

    evaluate = evaluate or evaluate_modes
    from .stack import Endpoints, fresh_stack

    if args.upload_url or args.search_url:
        if not (args.upload_url and args.search_url and args.admin_key):
            raise ValidationError("a running stack needs --upload-url, --search-url and --admin-key together",
                                  field="upload_url")
        endpoints = Endpoints(args.upload_url, args.search_url, args.admin_key, args.dsn)
        return asyncio.run(evaluate(dataset, endpoints, options, progress))
    if args.entity:
        raise ValidationError("--entity needs a running stack (--upload-url, --search-url, --admin-key)",
                              field="entity")
    config_path = Path(args.config) if args.config else config_module.find_config()
    with fresh_stack(config_path, keep_state=args.keep_state, progress=progress) as endpoints:
        return asyncio.run(evaluate(dataset, endpoints, options, progress))
