"""Every worker names its start-up stages to the supervisor, down to "ready", and its log says them."""

from __future__ import annotations

from edgeindex import startup_progress


def test_each_worker_reports_its_stages_and_ends_ready(stack):
    log = stack.log_path.read_text()
    for name in stack.worker_names:
        stage = startup_progress.read(stack.startup_file(name))
        assert stage is not None and stage[1] == "ready", (name, stage)
    assert "start-up: loading the embedding model" in log
    assert "start-up: preparing the query encoder" in log
    assert "Loading weights" not in log  # the stages say what happens; no weight-loading bars
