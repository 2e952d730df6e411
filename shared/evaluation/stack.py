"""Where the evaluated stack lives: a fresh one started for the run, or one already running."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import config as config_module


@dataclass(frozen=True)
class Endpoints:
    upload_url: str
    search_url: str
    admin_key: str
    dsn: str = ""          # only needed to read vectors back for the Chroma baseline
    log_path: str = ""     # worker logs of a stack started here


@contextlib.contextmanager
def fresh_stack(config_path: Path, *, keep_state: bool = False,
                progress: Callable[[str], None] = print) -> Iterator[Endpoints]:
    """A whole DevStack on a temporary state folder and free ports, stopped and removed afterwards.

    Nothing of a developer's own ``edgeindex dev`` state is touched, and two runs can
    go side by side.
    """
    from ..runtime.dev import DevStack, free_port

    state = Path(tempfile.mkdtemp(prefix="edgeindex-eval-"))
    environ = {**os.environ, "EDGEINDEX_STATE_DIR": str(state)}
    cfg = config_module.load(config_path, environ=environ)
    for name in cfg.workers:
        environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
    cfg = config_module.load(config_path, environ=environ)
    log_path = state / "workers.log"
    progress(f"starting a fresh stack (state {state}, worker logs {log_path})")
    try:
        with open(log_path, "w") as log:
            stack = DevStack(cfg, worker_output=log, environ=environ)
            # the state is thrown away afterwards: no point mirroring the bucket to disk every few seconds
            # (it lists every object each time, which competes with ingestion for the embedded S3)
            stack.SNAPSHOT_SECONDS = 24 * 3600.0
            stack.start()
            try:
                yield Endpoints(stack.url("upload"), stack.url("search"), stack.admin_key, stack.dsn, str(log_path))
            finally:
                stack.stop()
    except BaseException:
        if log_path.exists():
            progress(f"last worker log lines ({log_path}):\n{log_path.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        if keep_state:
            progress(f"stack state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)
