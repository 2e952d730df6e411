"""The caches without their KV: while the KV's server is down, searches answer from the database.

Every cached answer is checked against the entity sequences the request reads from the KV first
(``cache.read_sequences``); a request that cannot read them cannot tell a current entry from a
stale one, so it serves none and stores none: it answers uncached, with ``"cache": "bypassed"``.
After a failure the KV is left alone for ``pause`` seconds, so an outage costs each request nothing
more than the check of a clock (a server that does not answer at all would cost its connect
timeout per request).
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("edgeindex.search")


class KVOutage:
    """Whether to try the KV now, and how many searches went without it."""

    def __init__(self, *, pause: float = 1.0, clock=time.monotonic) -> None:
        self.pause = pause
        self._clock = clock
        self._until = 0.0
        self.bypassed = 0   # searches answered without the caches
        self.outages = 0    # times the KV stopped answering

    def available(self) -> bool:
        return self._clock() >= self._until

    def failed(self, exc: Exception) -> None:
        if self.available():
            self.outages += 1
            log.warning("the KV did not answer (%s): searches bypass the caches for %.1fs, then try again",
                        exc, self.pause)
        self._until = self._clock() + self.pause
