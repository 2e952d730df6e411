"""The ``--tools`` / ``--indices`` modes of ``edgeindex eval`` (see selection.py)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import config as config_module
from ..errors import ValidationError
from . import selection
from .stack import Endpoints, fresh_stack


def _run_all(args, endpoints: Endpoints) -> dict:
    results: dict = {}
    if args.tools:
        out = selection.run("tools", args.tools, endpoints, k=5)
        results["tools"] = out["tools"]
        results["tools_splits"] = out["splits"]
        if "feedback" in out:
            results["tools_feedback"] = out["feedback"]
        for key in ("two_task", "by_category"):
            if key in out:
                results[f"tools_{key}"] = out[key]
        results.setdefault("datasets", {})["tools"] = out["dataset"]
        print("\ntools (" + str(args.tools) + ")\n" + selection.format_table(out), flush=True)
    if args.indices:
        out = selection.run("indices", args.indices, endpoints, variant="databases")
        results["indices"] = out["indices"]
        results["indices_splits"] = out["splits"]
        results.setdefault("datasets", {})["indices"] = out["dataset"]
        print("\nindices (" + str(args.indices) + ")\n" + selection.format_table(out), flush=True)
        if (args.indices / "indices_tables.jsonl").exists() and (args.indices / "queries_tables.jsonl").exists():
            out = selection.run("indices", args.indices, endpoints, variant="tables")
            results["indices_tables"] = out["indices"]
            results["indices_tables_splits"] = out["splits"]
            results["datasets"]["indices_tables"] = out["dataset"]
            print("\nindices, table level\n" + selection.format_table(out), flush=True)
    return results


def run_selection(args) -> int:
    if args.upload_url or args.search_url:
        if not (args.upload_url and args.search_url and args.admin_key):
            raise ValidationError("a running stack needs --upload-url, --search-url and --admin-key together",
                                  field="upload_url")
        results = _run_all(args, Endpoints(args.upload_url, args.search_url, args.admin_key, args.dsn))
    else:
        config_path = Path(args.config) if args.config else config_module.find_config()
        with fresh_stack(config_path, keep_state=args.keep_state, progress=print) as endpoints:
            results = _run_all(args, endpoints)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "results.json"
        path.write_text(json.dumps(results, indent=2))
        print(f"wrote {path}")
    return 0
