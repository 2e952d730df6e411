"""The per-key rate limit while the shared buckets' KV does not answer: this process's buckets limit."""

from __future__ import annotations

import pytest
from edgeindex.errors import KVUnavailable, RateLimited
from edgeindex.tenancy import RateLimiter


class DownBuckets:
    def take(self, bucket: str, rate: float, burst: float) -> float:
        raise KVUnavailable("Redis did not answer")


def test_a_limit_holds_on_local_buckets_while_the_shared_ones_do_not_answer():
    now = [0.0]
    limiter = RateLimiter(2.0, burst=3.0, clock=lambda: now[0], buckets=DownBuckets())
    for _ in range(3):
        limiter.take("key")
    with pytest.raises(RateLimited):
        limiter.take("key")
    now[0] += 0.5  # one token back at 2/s
    limiter.take("key")
