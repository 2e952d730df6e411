"""Trajectories in the KV (trajectories/store.py), on diskcache and on a real redis-server: each
connection is opened as another search process would open it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from edgeindex.bindings.kv import KV, DiskKV
from edgeindex.bindings.redis_kv import RedisKV
from edgeindex.errors import Conflict, NotFound
from edgeindex.runtime.dev import free_port
from edgeindex.runtime.redis_server import RedisServer
from edgeindex.tenancy import Principal
from edgeindex.trajectories import state
from edgeindex.trajectories.store import Limits, TrajectoryStore

LIMITS = Limits(ttl=600, max_steps=3, max_chunks=50)
ALICE = Principal("key-alice", False, frozenset({"e1"}))
BOB = Principal("key-bob", False, frozenset({"e1"}))


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    with RedisServer(tmp_path_factory.mktemp("redis"), free_port()) as server:
        yield server.url


@pytest.fixture(params=["diskcache", "redis"])
def open_store(request, tmp_path, redis_url) -> Iterator[Callable[[], TrajectoryStore]]:
    opened: list[KV] = []
    namespace = f"ns-{id(tmp_path)}"

    def open_one() -> TrajectoryStore:
        kv: KV = (DiskKV(tmp_path / "kv", namespace=namespace) if request.param == "diskcache"
                  else RedisKV(redis_url, namespace=namespace))
        opened.append(kv)
        return TrajectoryStore(kv, LIMITS)

    yield open_one
    for kv in opened:
        kv.close()


def candidates(*ids: str) -> list[state.Candidate]:
    return [state.candidate({"chunk_id": i, "document_id": f"doc-{i}", "entity_id": "e1", "position": 0,
                             "text": f"the passage {i} " * 12}, tokens=5) for i in ids]


def step(store: TrajectoryStore, principal: Principal, trajectory_id: str, *ids: str) -> state.Trajectory:
    return store.record(principal, trajectory_id, lambda t: state.record(
        t, f"query {ids}", candidates(*ids), {"chunks": 1.0, "documents": 1.0}, 5 * len(ids)))


def test_a_step_recorded_by_one_process_is_read_by_another(open_store):
    first, second = open_store(), open_store()
    step(first, ALICE, "t1", "a", "b")
    read = second.get(ALICE, "t1")
    assert list(read.chunks) == ["a", "b"] and read.tokens == 10 and read.steps[0].query == "query ('a', 'b')"


def test_another_keys_trajectory_of_the_same_name_is_never_found(open_store):
    store = open_store()
    step(store, ALICE, "shared-name", "a")
    with pytest.raises(NotFound):
        store.get(BOB, "shared-name")
    assert store.open(BOB, "shared-name").chunks == {}  # Bob's first use starts his own
    step(store, BOB, "shared-name", "z")
    assert list(store.get(ALICE, "shared-name").chunks) == ["a"]


def test_creating_a_taken_id_is_a_conflict_and_a_new_id_is_random(open_store):
    store = open_store()
    made = store.create(ALICE)
    assert made.id.startswith("t_") and store.create(ALICE).id != made.id
    with pytest.raises(Conflict):
        store.create(ALICE, made.id)


def test_a_full_trajectory_refuses_the_next_step(open_store):
    store = open_store()
    for i in range(LIMITS.max_steps):
        store.open(ALICE, "t")
        step(store, ALICE, "t", f"c{i}")
    with pytest.raises(Conflict, match="is full"):
        store.open(ALICE, "t")


def test_concurrent_steps_of_one_trajectory_all_land(open_store):
    stores = [open_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait()
            for j in range(5):
                step(stores[n], ALICE, "busy", f"p{n}-{j}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = stores[0].get(ALICE, "busy")
    assert sorted(final.chunks) == sorted(f"p{n}-{j}" for n in range(4) for j in range(5))
    assert len(final.steps) == 20 and final.tokens == 100


def test_deleting_forgets_it(open_store):
    store = open_store()
    step(store, ALICE, "gone", "a")
    store.delete(ALICE, "gone")
    with pytest.raises(NotFound):
        store.get(ALICE, "gone")
    with pytest.raises(NotFound):
        store.delete(ALICE, "gone")
