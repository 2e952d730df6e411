"""Faults and hold points reach a worker process through its launcher's command line, never through the
product's environment."""

from __future__ import annotations

import sys

from edgeindex import faults, holds
from edgeindex.testing import worker


def test_faults_round_trip_and_an_empty_launcher_adds_nothing():
    armed = faults.Faults(exit_after_step="embed@doc-1", slow_seconds=2.5, no_visibility_extension=True)
    assert faults.Faults.from_json(armed.to_json()) == armed
    assert worker.WorkerHooks().command() == [sys.executable, "-m", "edgeindex.testing.worker", "--"]
    command = worker.WorkerHooks(holds=True, faults=armed).command()
    assert command[3:5] == ["--holds", "--faults"] and faults.Faults.from_json(command[5]) == armed


def test_the_launcher_arms_this_process_then_runs_the_cli(monkeypatch):
    ran = []
    monkeypatch.setattr(faults, "_active", faults.Faults())
    monkeypatch.setattr(holds, "_enabled", False)
    monkeypatch.setattr("edgeindex.cli.main", lambda argv: ran.append(argv) or 0)
    armed = faults.Faults(fail_step="chunk@x")
    assert worker.main(["--holds", "--faults", armed.to_json(), "--", "worker", "ingest"]) == 0
    assert ran == [["worker", "ingest"]]
    assert faults.active() == armed and holds._enabled
    try:
        faults.fail("chunk", "x")
    except ConnectionError as exc:
        assert "fail_step" in str(exc)
    else:
        raise AssertionError("the armed fault did not fire")
    faults.fail("chunk", "other-document")  # armed for one document only


def test_unarmed_points_do_nothing(monkeypatch):
    monkeypatch.setattr(faults, "_active", faults.Faults())
    faults.fail("chunk", "x")
    faults.poison(["a text"])
    faults.exit_in("upsert", "x")
