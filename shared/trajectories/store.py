"""Trajectories in the KV: every search process (and host, with Redis) reads the same one.

A trajectory belongs to the API key that made it: its KV key holds the key's id, so another key's
trajectory of the same name is a different one, and never found (404). Each step renews the TTL.
A step is recorded in an optimistic transaction, tried again when another step of the same
trajectory committed first, so concurrent steps both land.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..bindings.kv import KV
from ..errors import Conflict, KVConflict, NotFound
from ..tenancy import Principal
from .state import Seen, Step, Trajectory

# Steps of one trajectory that commit at once retry, after a short random pause that grows with
# each attempt (so they stop colliding), up to this many times.
COMMIT_ATTEMPTS = 50


@dataclass(frozen=True)
class Limits:
    ttl: float          # seconds a trajectory lives after its last step
    max_steps: int
    max_chunks: int


class TrajectoryStore:
    def __init__(self, kv: KV, limits: Limits) -> None:
        self.kv = kv
        self.limits = limits

    def create(self, principal: Principal, trajectory_id: str | None = None) -> Trajectory:
        trajectory = Trajectory(trajectory_id or new_id(), principal.key_id)
        with self.kv.transact():
            if self.kv.get(_key(principal, trajectory.id)) is not None:
                raise Conflict(f"trajectory {trajectory.id!r} exists", field="trajectory")
            self._put(principal, trajectory)
        return trajectory

    def get(self, principal: Principal, trajectory_id: str) -> Trajectory:
        raw = self.kv.get(_key(principal, trajectory_id))
        if raw is None:
            raise NotFound(f"no trajectory {trajectory_id!r} for this API key (it may have expired)",
                           field="trajectory")
        return _load(raw)

    def open(self, principal: Principal, trajectory_id: str) -> Trajectory:
        """The trajectory for a step: created on first use, and refused (409) when full."""
        raw = self.kv.get(_key(principal, trajectory_id))
        trajectory = Trajectory(trajectory_id, principal.key_id) if raw is None else _load(raw)
        self._check_room(trajectory)
        return trajectory

    def record(self, principal: Principal, trajectory_id: str, change: Callable[[Trajectory], None]) -> Trajectory:
        """Applies ``change`` to the stored trajectory (or a new one) and stores it."""
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                with self.kv.transact():
                    raw = self.kv.get(_key(principal, trajectory_id))
                    trajectory = Trajectory(trajectory_id, principal.key_id) if raw is None else _load(raw)
                    change(trajectory)
                    self._put(principal, trajectory)
                return trajectory
            except KVConflict:
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, 0.001) * (attempt + 1))
        raise AssertionError("unreachable")

    def delete(self, principal: Principal, trajectory_id: str) -> None:
        if not self.kv.delete(_key(principal, trajectory_id)):
            raise NotFound(f"no trajectory {trajectory_id!r} for this API key", field="trajectory")

    def _check_room(self, trajectory: Trajectory) -> None:
        if len(trajectory.steps) >= self.limits.max_steps or len(trajectory.chunks) >= self.limits.max_chunks:
            raise Conflict(f"trajectory {trajectory.id!r} is full ({len(trajectory.steps)} steps, "
                           f"{len(trajectory.chunks)} chunks; TRAJECTORY_MAX_STEPS {self.limits.max_steps}, "
                           f"TRAJECTORY_MAX_CHUNKS {self.limits.max_chunks}): start another", field="trajectory")

    def _put(self, principal: Principal, trajectory: Trajectory) -> None:
        self.kv.put(_key(principal, trajectory.id), _dump(trajectory), ttl=self.limits.ttl)


def new_id() -> str:
    return "t_" + secrets.token_urlsafe(12)


def _key(principal: Principal, trajectory_id: str) -> str:
    return f"trajectory:{principal.key_id}:{trajectory_id}"


def _dump(trajectory: Trajectory) -> dict:
    """What ``dataclasses.asdict`` makes of it, field by field (asdict's deep copy is ~10x the cost,
    paid on every step)."""
    return {"id": trajectory.id, "key_id": trajectory.key_id, "created": trajectory.created,
            "tokens": trajectory.tokens,
            "steps": [{"query": s.query, "at": s.at, "returned": list(s.returned), "novelty": dict(s.novelty),
                       "tokens": s.tokens} for s in trajectory.steps],
            "chunks": {cid: {"entity_id": c.entity_id, "document_id": c.document_id, "position": c.position,
                             "fingerprint": c.fingerprint, "simhash": c.simhash, "tokens": c.tokens, "step": c.step}
                       for cid, c in trajectory.chunks.items()}}


def _load(raw: dict) -> Trajectory:
    # stored as plain dicts, so a value written by another version of the classes still loads
    return Trajectory(id=raw["id"], key_id=raw["key_id"], created=raw["created"], tokens=raw["tokens"],
                      steps=[Step(**s) for s in raw["steps"]],
                      chunks={cid: Seen(**s) for cid, s in raw["chunks"].items()})
