"""A trajectory: the searches of one agent task, each leaving out what the ones before returned.

``client.trajectory()`` gives a ``Trajectory`` (``AsyncTrajectory`` from ``AsyncClient``) that keeps
the id and the last step's novelty, so a tool loop reads::

    t = client.trajectory()
    answer = t.search("termination clauses", entity_ids=["acme"])
    while t.novelty["chunks"] > 0.2 and t.steps < 5:
        answer = t.search(next_query(answer), entity_ids=["acme"])
    grounding = t.grounding()

The id is created on the first search (or by ``create=True``, which refuses an id already taken);
the server keeps the trajectory for its TTL after the last step, so another process may continue it
under the same id.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from . import _ops as ops
from . import models as m

if TYPE_CHECKING:
    from .async_client import AsyncClient
    from .client import Client


class _State:
    def __init__(self, trajectory_id: str | None) -> None:
        self.id = trajectory_id or f"t_{secrets.token_hex(8)}"
        self.last: m.TrajectoryStep | None = None

    @property
    def novelty(self) -> dict[str, float]:
        """The last step's novelty (``chunks``, ``documents``): 1.0 before the first step."""
        return dict(self.last.novelty) if self.last else {"chunks": 1.0, "documents": 1.0}

    @property
    def steps(self) -> int:
        return self.last.step if self.last else 0

    @property
    def tokens(self) -> int:
        """Tokens of all text the trajectory has returned."""
        return self.last.tokens.get("total", 0) if self.last else 0

    def _seen(self, answer: Any) -> Any:
        if answer.trajectory is not None:
            self.last = answer.trajectory
        return answer


def _expand_request(chunk_id: str, mode: str | None, k: int | None, entity_ids: list[str] | None,
                    include: m.SearchInclude | dict | None) -> m.ExpandRequest:
    options = dict(mode=mode, k=k, entity_ids=entity_ids, include=include)
    return m.ExpandRequest.model_validate({"chunk_id": chunk_id, **{n: v for n, v in options.items() if v is not None}})


class Trajectory(_State):
    def __init__(self, client: Client, trajectory_id: str | None = None, *, create: bool = False) -> None:
        super().__init__(trajectory_id)
        self._client = client
        if create:
            self._client._run(ops.create_trajectory(self.id))

    def search(self, query: str, **options: Any) -> m.SearchResponse:
        """``client.search`` as a step of this trajectory (``seen`` and every search option pass through)."""
        return self._seen(self._client.search(query, trajectory=self.id, **options))

    def expand(self, chunk_id: str, mode: str | None = None, *, k: int | None = None,
               entity_ids: list[str] | None = None, include: m.SearchInclude | dict | None = None
               ) -> m.TrajectoryExpansion:
        """Around a chunk this trajectory returned: ``neighbours``, the rest of its ``document``, or
        ``similar`` chunks, never one it returned before."""
        request = _expand_request(chunk_id, mode, k, entity_ids, include)
        return self._seen(self._client._run(ops.expand(self.id, request)))

    def grounding(self) -> m.TrajectoryGrounding:
        return self._client._run(ops.grounding(self.id))

    def delete(self) -> bool:
        return self._client._run(ops.delete_trajectory(self.id))


class AsyncTrajectory(_State):
    def __init__(self, client: AsyncClient, trajectory_id: str | None = None) -> None:
        super().__init__(trajectory_id)
        self._client = client

    async def create(self) -> AsyncTrajectory:
        """Creates the id on the server now (refused when taken); otherwise the first search does."""
        await self._client._run(ops.create_trajectory(self.id))
        return self

    async def search(self, query: str, **options: Any) -> m.SearchResponse:
        return self._seen(await self._client.search(query, trajectory=self.id, **options))

    async def expand(self, chunk_id: str, mode: str | None = None, *, k: int | None = None,
                     entity_ids: list[str] | None = None, include: m.SearchInclude | dict | None = None
                     ) -> m.TrajectoryExpansion:
        request = _expand_request(chunk_id, mode, k, entity_ids, include)
        return self._seen(await self._client._run(ops.expand(self.id, request)))

    async def grounding(self) -> m.TrajectoryGrounding:
        return await self._client._run(ops.grounding(self.id))

    async def delete(self) -> bool:
        return await self._client._run(ops.delete_trajectory(self.id))
