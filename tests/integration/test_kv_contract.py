"""One KV contract, run against both engines: diskcache (embedded, one host) and a real
redis-server (shared by every host). Two instances of one engine stand for two processes or hosts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from edgeindex import cache
from edgeindex.bindings.kv import KV, DiskKV
from edgeindex.bindings.redis_kv import RedisKV
from edgeindex.config import Config
from edgeindex.env import kv_namespace
from edgeindex.errors import KVConflict, RateLimited
from edgeindex.runtime.dev import free_port
from edgeindex.runtime.redis_server import RedisServer
from edgeindex.tenancy import RateLimiter


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    with RedisServer(tmp_path_factory.mktemp("redis"), free_port()) as server:
        yield server.url


@pytest.fixture(params=["diskcache", "redis"])
def open_kv(request, tmp_path, redis_url) -> Iterator[Callable[..., KV]]:
    """Opens a connection (as another process would) to one shared store, in a fresh namespace."""
    opened: list = []
    namespace = f"ns-{request.node.name}-{id(tmp_path)}"

    def open_one(ns: str = namespace) -> KV:
        kv: KV = (DiskKV(tmp_path / "kv", namespace=ns) if request.param == "diskcache"
                  else RedisKV(redis_url, namespace=ns))
        opened.append(kv)
        return kv

    yield open_one
    for kv in opened:
        kv.close()


def test_values_ttl_delete_list_incr_and_namespaces(open_kv):
    kv, other = open_kv(), open_kv("elsewhere")
    kv.put("a:1", {"v": 1})
    kv.put("a:2", [2])
    kv.put("a*[x]", 3)  # glob characters in a key are literal
    other.put("a:9", 9)
    assert kv.get("a:1") == {"v": 1}
    assert kv.get("missing", "dflt") == "dflt"
    assert sorted(kv.list("a:")) == ["a:1", "a:2"]
    assert kv.list("a*") == ["a*[x]"]
    assert other.list("") == ["a:9"]  # namespaces do not leak into each other
    assert kv.delete("a:1", "missing") == 1
    assert kv.get("a:1") is None
    assert kv.incr("n") == 1 and kv.incr("n", 2) == 3 and open_kv().incr("n") == 4
    # in order, None where absent, counters as incr left them, never another namespace's
    assert kv.get_many(["a:2", "a:9", "n", "a*[x]"]) == [[2], None, 4, 3]
    assert kv.get_many([]) == []


def test_a_value_expires_after_its_ttl(open_kv):
    kv = open_kv()
    kv.put("short", "x", ttl=0.2)
    kv.put("long", "y", ttl=60)
    assert kv.get("short") == "x"
    _wait_until(lambda: kv.get("short") is None)
    assert kv.get("long") == "y"


def test_member_sets_expire_member_by_member_and_pop_empties_them(open_kv):
    kv, other = open_kv(), open_kv()
    kv.add_to_sets(["s1", "s2"], "m-short", ttl=0.2)
    kv.add_to_sets(["s1"], "m-long", ttl=60)
    assert other.set_members("s1") == {"m-short", "m-long"}
    _wait_until(lambda: other.set_members("s1") == {"m-long"})
    kv.add_to_sets(["s2"], "m2", ttl=60)
    assert other.pop_sets(["s1", "s2"]) == {"m-long", "m2"}
    assert kv.pop_sets(["s1", "s2"]) == set()


def test_concurrent_stores_and_invalidations_never_leave_a_stale_result_to_serve(open_kv):
    """Rounds of two writers at once: one stores a result computed from the data it read, the other
    changes the data inside an invalidation. After each round no result readable at the current
    sequences holds data older than the change. The store starts at a different point of the
    change in each round, so some rounds read the data inside the change's window."""
    storer, invalidator, reader = open_kv(), open_kv(), open_kv()
    data = {"version": 0}

    def change() -> None:
        cache.begin_invalidation(invalidator, ["e1"], ["c1"])
        time.sleep(0.002)  # the database commit the invalidation brackets takes a while ...
        data["version"] += 1
        cache.end_invalidation(invalidator, ["e1"], ["c1"])

    stale = []
    for i in range(120):
        changer = threading.Thread(target=change)
        changer.start()
        time.sleep((i % 6) * 0.0005)
        sequences = cache.read_sequences(storer, ["e1"])
        seen = data["version"]
        time.sleep(0.002)  # ... and so does the search between reading the data and storing it
        cache.store(storer, f"q{i}", {"version": seen}, chunk_ids=["c1"], entity_ids=["e1"],
                    sequences=sequences, ttl=60)
        changer.join()
        served = cache.load(reader, f"q{i}", cache.read_sequences(reader, ["e1"]))
        if served is not None and served["version"] != data["version"]:
            stale.append((i, served))
    assert stale == []
    # with the changes quiet, a store at the current sequences lands and is served
    current = cache.read_sequences(reader, ["e1"])
    assert cache.store(storer, "after", {"version": data["version"]}, chunk_ids=["c1"], entity_ids=["e1"],
                       sequences=current, ttl=60)
    assert cache.load(reader, "after", current) == {"version": data["version"]}


def test_redis_transaction_writes_nothing_when_a_key_it_read_changed(redis_url):
    kv, other = RedisKV(redis_url, namespace="tx"), RedisKV(redis_url, namespace="tx")
    try:
        kv.put("seq:e1", 1)
        with pytest.raises(KVConflict), kv.transact():
            assert kv.get("seq:e1") == 1
            other.incr("seq:e1")  # another host's invalidation, between the check and the write
            kv.put("result:k", "stale")
            kv.add_to_sets(["ref:c1"], "k", ttl=60)
        assert kv.get("result:k") is None
        assert kv.set_members("ref:c1") == set()
        with kv.transact():  # nothing changed this time: the queued writes land together
            kv.get("seq:e1")
            kv.put("result:k", "fresh")
        assert other.get("result:k") == "fresh"
    finally:
        kv.close()
        other.close()


def test_cache_store_reports_not_stored_on_a_conflict(redis_url, monkeypatch):
    kv, other = RedisKV(redis_url, namespace="conflict"), RedisKV(redis_url, namespace="conflict")
    original_get = kv.get

    def get_then_invalidate(key, default=None):
        value = original_get(key, default)
        if key.startswith("barrier:"):  # the store's last read before its writes
            other.incr("seq:e1")
        return value

    monkeypatch.setattr(kv, "get", get_then_invalidate)
    try:
        assert cache.store(kv, "k", {"v": 1}, chunk_ids=["c1"], entity_ids=["e1"], sequences=(0,), ttl=60) is False
        assert other.get(cache.result_key("k")) is None
    finally:
        kv.close()
        other.close()


def _config(state: Path, **kv) -> Config:
    return Config.model_validate({"name": "kv-test", "workers": {"w": {"main": "w.py", "port": 1}}, "state_dir": str(state),
                                  "services": {"kv": kv}})


def test_the_configured_backend_is_what_workers_bind(tmp_path, redis_url):
    host_a = _config(tmp_path / "a", backend="redis", url=redis_url)
    host_b = _config(tmp_path / "b", backend="redis", url=redis_url)
    a, b = kv_namespace(host_a, "cache"), kv_namespace(host_b, "cache")
    embedded = kv_namespace(_config(tmp_path / "c"), "cache")
    try:
        assert isinstance(a, RedisKV) and isinstance(embedded, DiskKV)
        a.incr("seq:shared-test")
        assert b.get("seq:shared-test") == a.get("seq:shared-test")  # two state folders, one store
        assert "***" in RedisKV("redis://user:secret@h:1/0", namespace="x").describe()["url"]
    finally:
        a.close()
        b.close()
        embedded.close()


def _wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)  # expiry is the clock's doing: there is no event to wait on


def test_a_key_rate_limit_on_redis_holds_across_processes(redis_url):
    """Two workers (two limiters, two connections) share one bucket per key: together they allow the
    configured burst, not twice it; another key has its own bucket; and the bucket refills."""
    first, second = RedisKV(redis_url, namespace="limits"), RedisKV(redis_url, namespace="limits")
    try:
        limiters = [RateLimiter(2, burst=4, buckets=kv.token_buckets()) for kv in (first, second)]
        allowed = 0
        with pytest.raises(RateLimited) as refused:
            for i in range(10):
                limiters[i % 2].take("key-a")
                allowed += 1
        assert allowed == 4
        assert 0 < refused.value.retry_after <= 0.5
        limiters[1].take("key-b")  # a key of its own
        _wait_until(lambda: _allowed(limiters[0], "key-a"))
    finally:
        first.close()
        second.close()


def test_in_process_buckets_count_per_process():
    clock = [0.0]
    limiters = [RateLimiter(2, burst=4, clock=lambda: clock[0]) for _ in range(2)]
    for i in range(8):  # each process allows its own burst: why several hosts need the shared KV
        limiters[i % 2].take("key-a")
    with pytest.raises(RateLimited):
        limiters[0].take("key-a")
    clock[0] += 0.5
    limiters[0].take("key-a")


def _allowed(limiter: RateLimiter, key: str) -> bool:
    try:
        limiter.take(key)
    except RateLimited:
        return False
    return True
