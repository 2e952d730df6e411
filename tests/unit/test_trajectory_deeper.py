"""A trajectory step whose first candidates were all seen asks the search again with the seen chunks
left out by the database (trajectories/service.py ``_deeper``). The search here is a ranked list
that honours k and ``filters.exclude_chunk_ids`` as the engine does, with MAX_K = 4, so that the
first search's four candidates are all seen by the third step."""

from __future__ import annotations

from types import SimpleNamespace

from edgeindex.bindings.kv import DiskKV
from edgeindex.tenancy import Principal
from edgeindex.trajectories.service import TrajectoryService
from edgeindex.trajectories.store import Limits, TrajectoryStore

RANKED = [{"chunk_id": f"00000000-0000-0000-0000-00000000000{i}", "document_id": f"d{i}", "entity_id": "e1",
           "position": 0, "text": f"distinct passage {i} on subject {i * 13} with words of its own " * 2}
          for i in range(9)]


class RankedSearch:
    settings = SimpleNamespace(max_k=4, max_query_chars=2000)

    def __init__(self) -> None:
        self.bodies: list[dict] = []

    async def search(self, principal, body, *, background):
        self.bodies.append(body)
        excluded = set((body.get("filters") or {}).get("exclude_chunk_ids") or [])
        results = [r for r in RANKED if r["chunk_id"] not in excluded][:body["k"]]
        return {"results": results, "count": len(results), "cache": "none", "search_id": "s"}


async def test_a_step_past_max_k_is_answered_from_deeper_in_the_ranking(tmp_path):
    search = RankedSearch()
    kv = DiskKV(tmp_path / "kv", namespace="t")
    service = TrajectoryService(search=search, db=None, store=TrajectoryStore(kv, Limits(600, 10, 100)))  # type: ignore[arg-type]
    principal = Principal("key", False, frozenset({"e1"}))
    steps = [await service.step(principal, {"query": "q", "k": 2, "trajectory": "t"}, background=None)
             for _ in range(4)]
    returned = [[r["document_id"] for r in s["results"]] for s in steps]
    assert returned == [["d0", "d1"], ["d2", "d3"], ["d4", "d5"], ["d6", "d7"]]
    assert [b["k"] for b in search.bodies[:2]] == [4, 4]  # min(MAX_K, 2k + seen)
    assert "filters" not in search.bodies[2]  # the third step: first the plain search, all seen
    assert search.bodies[3]["filters"]["exclude_chunk_ids"] == [r["chunk_id"] for r in RANKED[:4]]
    assert [s["trajectory"]["novelty"]["chunks"] for s in steps] == [1.0, 0.0, 0.0, 0.0]
    kv.close()
