"""After the KV fails, searches leave it alone for the pause, then try it again."""

from __future__ import annotations

from edgeindex.errors import KVUnavailable
from edgeindex.search.kv_outage import KVOutage


def test_the_kv_is_tried_again_once_the_pause_after_a_failure_is_over():
    now = [0.0]
    outage = KVOutage(pause=1.0, clock=lambda: now[0])
    assert outage.available()
    outage.failed(KVUnavailable("down"))
    assert not outage.available() and outage.outages == 1
    now[0] = 0.9
    assert not outage.available()
    now[0] = 1.0
    assert outage.available()
