"""``python -m edgeindex.testing.worker [--holds] [--faults JSON] -- <edgeindex arguments>``: a worker
process with hold points live (``edgeindex.holds``) and faults armed (``edgeindex.faults``), then exactly
what ``edgeindex <arguments>`` runs. ``DevStack(hooks=...)`` starts its workers this way."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from .. import faults, holds


@dataclass(frozen=True)
class WorkerHooks:
    """What a test turns on in the worker processes it starts."""

    holds: bool = False
    faults: faults.Faults = field(default_factory=faults.Faults)

    def command(self) -> list[str]:
        """The launcher's command up to the ``edgeindex`` arguments."""
        extra = ["--holds"] if self.holds else []
        if self.faults != faults.Faults():
            extra += ["--faults", self.faults.to_json()]
        return [sys.executable, "-m", __name__, *extra, "--"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgeindex.testing.worker")
    parser.add_argument("--holds", action="store_true", help="make the hold points live")
    parser.add_argument("--faults", help="an edgeindex.faults.Faults as JSON")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- then the edgeindex command line")
    args = parser.parse_args(argv)
    if args.holds:
        holds.enable()
    if args.faults:
        faults.install(faults.Faults.from_json(args.faults))
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    from ..cli import main as edgeindex

    return edgeindex(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
