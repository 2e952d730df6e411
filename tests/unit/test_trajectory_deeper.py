"""A trajectory step whose first candidates were all seen asks for more with the seen chunks left out
by the database (trajectories/service.py ``_deeper``): by continuing the first search
(``SearchService.more``: its embedding and blend again) when it ran its statements, else by searching
again. The search here is a ranked list that honours k and the exclusions as the engine does, with
MAX_K = 4, so that the first search's four candidates are all seen by the third step."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from edgeindex.bindings.kv import DiskKV
from edgeindex.tenancy import Principal
from edgeindex.trajectories.service import TrajectoryService
from edgeindex.trajectories.store import Limits, TrajectoryStore

RANKED = [{"chunk_id": f"00000000-0000-0000-0000-00000000000{i}", "document_id": f"d{i}", "entity_id": "e1",
           "position": 0, "text": f"distinct passage {i} on subject {i * 13} with words of its own " * 2}
          for i in range(9)]


def ranked(excluded: list[str], k: int, ranking: list[dict] | None = None) -> list[dict]:
    return [r for r in ranking or RANKED if r["chunk_id"] not in set(excluded)][:k]


def as_row(result: dict) -> dict:
    """A result as the engine's statement returns it (``more`` answers rows; engine.shape shapes them)."""
    return {**result, "start_char": 0, "end_char": len(result["text"]), "score": 1.0, "vector": 1.0, "text": 0.0,
            "trigram": 0.0, "content": result["text"], "title": "", "source": "", "tags": [], "summary": None,
            "copy_fingerprint": None, "copy_simhash": None, "context_tokens": None}


# what the inner search asked for (trajectories/service.py _search): the text, to tell copies apart
CONTEXT = SimpleNamespace(rows=[], request=SimpleNamespace(include=SimpleNamespace(text=True, summary=False,
                                                                                    neighbours=0)))


class RankedSearch:
    settings = SimpleNamespace(max_k=4, max_query_chars=2000)

    def __init__(self, continues: bool, ranking: list[dict] | None = None) -> None:
        self.continues = continues
        self.ranking = ranking
        self.bodies: list[dict] = []
        self.continued: list[tuple[list[str], int]] = []

    async def search_with_context(self, principal, body, *, background):
        self.bodies.append(body)
        results = ranked((body.get("filters") or {}).get("exclude_chunk_ids") or [], body["k"], self.ranking)
        return {"results": results, "count": len(results), "cache": "none", "search_id": "s"}, CONTEXT

    def can_continue(self, context) -> bool:
        return self.continues

    async def more(self, context, exclude_chunk_ids, limit):
        self.continued.append((exclude_chunk_ids, limit))
        return [as_row(r) for r in ranked(exclude_chunk_ids, limit, self.ranking)]


@pytest.mark.parametrize("continues", [True, False])
async def test_a_step_past_max_k_is_answered_from_deeper_in_the_ranking(tmp_path, continues):
    search = RankedSearch(continues)
    kv = DiskKV(tmp_path / "kv", namespace="t")
    service = TrajectoryService(search=search, db=None, store=TrajectoryStore(kv, Limits(600, 10, 100)))  # type: ignore[arg-type]
    principal = Principal("key", False, frozenset({"e1"}))
    steps = [await service.step(principal, {"query": "q", "k": 2, "trajectory": "t"}, background=None)
             for _ in range(4)]
    returned = [[r["document_id"] for r in s["results"]] for s in steps]
    assert returned == [["d0", "d1"], ["d2", "d3"], ["d4", "d5"], ["d6", "d7"]]
    assert [s["trajectory"]["novelty"]["chunks"] for s in steps] == [1.0, 0.0, 0.0, 0.0]
    ids = [r["chunk_id"] for r in RANKED]
    # the third and fourth steps' first search (min(MAX_K, 2k)) holds only seen chunks: more leaves out
    # the trajectory's other chunks and every candidate looked at
    deeper = [(ids[:4], 4), (ids[4:6] + ids[:4], 4)]
    if continues:
        assert search.continued == deeper
        assert len(search.bodies) == 4 and all("filters" not in b for b in search.bodies)
    else:
        assert search.continued == []
        assert [(b["filters"]["exclude_chunk_ids"], b["k"]) for b in search.bodies[3::2]] == deeper
    kv.close()


async def test_a_batch_of_copies_is_followed_by_another(tmp_path):
    """The third step's first continuation finds only copies of what the trajectory returned: a second
    one, past them, answers."""
    ranking = [{**RANKED[0], "chunk_id": f"00000000-0000-0000-0000-0000000000{i:02d}", "document_id": f"d{i}",
                "text": f"distinct passage {i} on subject {i * 13} with words of its own " * 2} for i in range(12)]
    for i in range(4, 8):   # d4-d7: copies of d0 in other documents
        ranking[i] = {**ranking[i], "text": RANKED[0]["text"]}
    search = RankedSearch(True, ranking)
    kv = DiskKV(tmp_path / "kv", namespace="t")
    service = TrajectoryService(search=search, db=None, store=TrajectoryStore(kv, Limits(600, 10, 100)))  # type: ignore[arg-type]
    principal = Principal("key", False, frozenset({"e1"}))
    steps = [await service.step(principal, {"query": "q", "k": 2, "trajectory": "t"}, background=None)
             for _ in range(3)]
    assert [[r["document_id"] for r in s["results"]] for s in steps] == [["d0", "d1"], ["d2", "d3"], ["d8", "d9"]]
    ids = [r["chunk_id"] for r in ranking]
    assert search.continued == [(ids[:4], 4), (ids[:8], 4)]
    kv.close()


class StoredSignatures(RankedSearch):
    """A search whose statement's rows carry what ingestion stored of each chunk: d1's fingerprint
    is d0's (as if its text were a copy of d0's), and every chunk is stored as 7 tokens."""

    async def search_with_context(self, principal, body, *, background):
        answer, _ = await super().search_with_context(principal, body, background=background)
        rows = [{**as_row(r), "copy_fingerprint": "same" if r["document_id"] in ("d0", "d1") else r["document_id"],
                 "copy_simhash": None, "context_tokens": 7} for r in answer["results"]]
        return answer, SimpleNamespace(rows=rows, request=CONTEXT.request)


async def test_a_step_reads_the_copy_signatures_and_tokens_ingestion_stored(tmp_path):
    kv = DiskKV(tmp_path / "kv", namespace="t")
    service = TrajectoryService(search=StoredSignatures(False), db=None,  # type: ignore[arg-type]
                                store=TrajectoryStore(kv, Limits(600, 10, 100)))
    step = await service.step(Principal("key", False, frozenset({"e1"})), {"query": "q", "k": 2, "trajectory": "t"},
                              background=None)
    assert [r["document_id"] for r in step["results"]] == ["d0", "d2"]   # d1: a copy by its stored fingerprint
    assert step["trajectory"]["tokens"]["step"] == 14
    kv.close()
