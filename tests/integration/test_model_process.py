"""The local model in a child process (MODEL_PROCESS): the same vectors as in process, one bad call
fails alone, and a model process that dies fails its call and is replaced by the next one (real weights)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.model_process import ModelProcess
from edgeindex.errors import BindingError

TEXTS = [
    "rotate the oncall schedule",
    "what is theraderm used for",
    "Übergrößenträger — naïve café ☕ 東京 résumé",
    "x",
    "long " * 400,  # past the model's 256 tokens: truncated the same way
] * 4


@pytest.fixture(scope="module")
def child():
    model = ModelProcess(batch_size=8)
    model.set_threads(1)
    yield model
    asyncio.run(model.close())


def test_same_vectors_as_the_model_in_process(child):
    reference = local_embedder(8)
    reference.set_threads(1)
    reference.set_batch_size(8)
    ours = asyncio.run(child.embed(TEXTS))
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.array_equal(ours, reference.encode_sync(TEXTS))
    assert child.cpu_seconds > 0 and child.wall_seconds >= child.cpu_seconds
    assert (child.dimension, child.max_tokens) == (reference.dimension, reference.max_tokens)


def test_a_bad_call_fails_alone_and_the_process_keeps_serving(child):
    pid = child.pid
    with pytest.raises(BindingError, match="failed a call"):
        child.encode_sync([None])  # not a text: the tokenizer refuses it in the model process
    assert child.pid == pid
    assert asyncio.run(child.embed(["still here"])).shape == (1, 384)


def test_a_dead_model_process_fails_its_call_and_the_next_call_starts_a_new_one(child):
    before, restarts = child.pid, child.restarts
    os.kill(before, signal.SIGKILL)
    with pytest.raises(BindingError, match="ended during a call"):
        asyncio.run(child.embed(["lost with the process"]))
    vectors = asyncio.run(child.embed(TEXTS[:3]))
    assert child.pid not in (None, before) and child.restarts == restarts + 1
    assert np.array_equal(vectors, local_embedder(8).encode_sync(TEXTS[:3]))


# In a child: niceness cannot be taken back without privilege, and the test process should keep its own.
FIRST = r"""
import asyncio, json, os, signal, threading
from edgeindex.bindings.model_process import ModelProcess
from edgeindex.errors import BindingError

nice = lambda pid: os.getpriority(os.PRIO_PROCESS, pid)
model = ModelProcess(batch_size=8)
model.put_first(5)
first = {"main": nice(threading.get_native_id()), "model": nice(model.pid)}
os.kill(model.pid, signal.SIGKILL)
try:
    asyncio.run(model.embed(["lost"]))
except BindingError:
    pass
asyncio.run(model.embed(["a new model process"]))
print(json.dumps({"before": nice(0), **first, "restarted": nice(model.pid), "others_nice": model.others_nice}))
asyncio.run(model.close())
"""


def test_the_model_process_keeps_its_priority_below_which_the_worker_puts_itself_even_after_a_restart():
    if not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"):
        pytest.skip("needs Linux per-thread priorities")
    out = subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True, check=True, timeout=300)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the child started at the test process's priority
    assert seen["model"] == base and seen["restarted"] == base
    assert seen["main"] == min(19, base + 5) and seen["others_nice"] == 5
