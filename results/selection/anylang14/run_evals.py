"""Several `edgeindex eval --tools/--indices` runs on one fresh stack (the same code as the command,
`evaluation/selection_cli._run_all`, without a stack start per catalogue). Each writes
OUT/<name>/results.json and prints its table.

Usage: .venv/bin/python run_evals.py OUT tools:/tmp/x/tools indices:/tmp/x ...
"""

import json
import sys
import types
from pathlib import Path

from edgeindex import config as config_module
from edgeindex.evaluation.selection_cli import _run_all
from edgeindex.evaluation.stack import fresh_stack
from edgeindex.runtime import dev

# the shared VM ran at load 9-13 (four engineers' installs and tests): a worker took over 120 s to start
_wait = dev.DevStack.wait_healthy
dev.DevStack.wait_healthy = lambda self, name, timeout=900.0: _wait(self, name, timeout)


def main(out: Path, jobs: list[str]) -> None:
    with fresh_stack(config_module.find_config(), keep_state=False, progress=print) as endpoints:
        for job in jobs:
            kind, _, folder = job.partition(":")
            args = types.SimpleNamespace(tools=Path(folder) if kind == "tools" else None,
                                         indices=Path(folder) if kind == "indices" else None)
            name = f"{kind}-" + "-".join(Path(folder).parts[-2:])
            print(f"\n==== {name} ({folder})", flush=True)
            results = _run_all(args, endpoints)
            (out / name).mkdir(parents=True, exist_ok=True)
            (out / name / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
