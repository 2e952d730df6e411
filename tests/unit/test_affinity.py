"""The model's core of its own (runtime/affinity.py): when MODEL_CPU applies, and what it pins."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from edgeindex.runtime import affinity


def test_auto_gives_the_model_the_last_cpu_and_the_rest_to_everything_else():
    layout = affinity.plan("auto", [0, 1, 2, 3])
    assert layout == affinity.Layout(3, frozenset({0, 1, 2}))


def test_a_cpu_number_is_used_when_the_process_may_run_there():
    assert affinity.plan("0", [0, 1]) == affinity.Layout(0, frozenset({1}))
    assert affinity.plan(2, [1, 2, 5]) == affinity.Layout(2, frozenset({1, 5}))


@pytest.mark.parametrize("setting", ["off", "", None, "none", "OFF"])
def test_off_pins_nothing(setting):
    assert affinity.plan(setting, [0, 1]) is None


def test_one_cpu_pins_nothing():
    assert affinity.plan("auto", [3]) is None
    assert affinity.plan("3", [3]) is None


def test_a_cpu_outside_the_process_set_pins_nothing():
    assert affinity.plan("7", [0, 1]) is None


def test_a_bad_setting_names_the_var():
    with pytest.raises(ValueError, match="MODEL_CPU"):
        affinity.plan("fast", [0, 1])


def test_the_stack_layout_is_off_with_as_many_ingest_processes_as_cpus_leave_room_for():
    # two models on two cores leave no core for the rest: nothing is pinned
    stack = affinity.StackLayout("auto", ingest_processes=2)
    assert not stack
    assert stack.worker_preexec("upload") is None


needs_two = pytest.mark.skipif(not affinity.supported() or len(affinity.allowed_cpus()) < 2,
                               reason="needs Linux affinity and two CPUs")


@needs_two
def test_pin_model_puts_its_thread_alone_and_every_other_thread_on_the_rest():
    cpus = affinity.allowed_cpus()
    layout = affinity.plan("auto", cpus)
    original = os.sched_getaffinity(0)
    model = ThreadPoolExecutor(1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        model_tid = affinity.pin_model(layout, model)
        assert model.submit(lambda: threading.get_native_id()).result() == model_tid
        assert os.sched_getaffinity(model_tid) == {layout.model}
        assert os.sched_getaffinity(other.native_id) == set(layout.rest)
        assert os.sched_getaffinity(0) == set(layout.rest)  # this (main) thread
        # a thread started later by a pinned thread inherits its mask
        late = ThreadPoolExecutor(1)
        assert late.submit(lambda: os.sched_getaffinity(0)).result() == set(layout.rest)
        late.shutdown()
    finally:
        stop.set()
        other.join()
        model.shutdown()
        for tid in affinity.thread_ids():
            affinity.pin_thread(tid, original)


@needs_two
def test_thread_on_moves_the_calling_thread_and_restores_it():
    cpus = affinity.allowed_cpus()
    before = os.sched_getaffinity(0)
    with affinity.thread_on({cpus[-1]}):
        assert os.sched_getaffinity(0) == {cpus[-1]}
    assert os.sched_getaffinity(0) == before
