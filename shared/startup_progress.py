"""What a worker's start-up is doing, for the supervisor that waits for it (``edgeindex dev``, the tests,
``edgeindex eval``).

Start-up takes seconds on an idle machine and minutes on a loaded one (the embedding model, the
query encoder's exports). A supervisor that gives it a fixed wall-clock bound fails healthy starts
on slow machines; one that waits forever hides a stuck one. So each stage is named as it begins,
in the file the supervisor gives as ``EDGEINDEX_STARTUP_FILE``, and the supervisor waits as long as
stages keep coming, showing them; it gives up only on a worker that exits or stays in one stage
longer than its stall bound.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger("edgeindex.startup")

FILE_VARIABLE = "EDGEINDEX_STARTUP_FILE"


def report(stage: str) -> None:
    """This process begins ``stage`` (a few words a user reads: "loading the embedding model")."""
    log.info("start-up: %s", stage)
    path = os.environ.get(FILE_VARIABLE)
    if not path:
        return
    target = Path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_text(f"{time.time():.3f} {stage}\n")
    os.replace(partial, target)  # the supervisor never reads half a line


def read(path: Path) -> tuple[float, str] | None:
    """(when, stage) of the stage last reported in ``path``, or None before the first."""
    try:
        when, _, stage = path.read_text().strip().partition(" ")
        return float(when), stage
    except (OSError, ValueError):
        return None
