"""The stop deadline's parts (runtime/stopping.py): its setting, and tasks awaited together then abandoned."""

from __future__ import annotations

import asyncio
import time

import pytest
from edgeindex.errors import ConfigError
from edgeindex.runtime import stopping


def test_the_deadline_defaults_and_a_bad_value_names_the_variable():
    assert stopping.stop_seconds({}) == stopping.DEFAULT_SECONDS
    assert stopping.stop_seconds({stopping.VARIABLE: "2.5"}) == 2.5
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ConfigError) as caught:
            stopping.stop_seconds({stopping.VARIABLE: bad})
        assert caught.value.key == stopping.VARIABLE and repr(bad) in caught.value.message


async def test_tasks_are_awaited_together_and_what_outlives_the_deadline_is_cancelled():
    async def quick():
        await asyncio.sleep(0.05)

    async def hung():
        await asyncio.Event().wait()

    tasks = [asyncio.create_task(quick(), name="quick"), asyncio.create_task(hung(), name="hung-1"),
             asyncio.create_task(hung(), name="hung-2")]
    started = time.monotonic()
    left = await stopping.wait_all(tasks, stopping.Deadline(0.3))
    took = time.monotonic() - started
    assert 0.3 <= took < 0.6  # one deadline for all, not 0.3 s per task in turn
    assert [t.get_name() for t in left] == ["hung-1", "hung-2"]
    await stopping.abandon(left)
    assert all(t.cancelled() for t in left) and tasks[0].done() and not tasks[0].cancelled()
    assert stopping.describe(left[0]) == "hung-1 (test_tasks_are_awaited_together_and_what_outlives_the_deadline" \
                                         "_is_cancelled.<locals>.hung)"


async def test_a_bounded_cleanup_past_the_deadline_is_named():
    abandoned: list[str] = []
    deadline = stopping.Deadline(0.0)
    started = time.monotonic()
    await stopping.bounded(asyncio.Event().wait(), deadline, "the HTTP server's cleanup", abandoned)
    assert abandoned == ["the HTTP server's cleanup"] and time.monotonic() - started < 1.0
