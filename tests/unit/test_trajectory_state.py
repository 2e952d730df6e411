"""How a trajectory step's ranked candidates become its answer (trajectories/state.py), and which
texts count as copies (copies.py): pure logic, no search."""

from __future__ import annotations

import pytest
from edgeindex import copies
from edgeindex.trajectories import state

PASSAGE = ("The payment gateway returned HTTP 502 errors for fourteen minutes after a certificate rotation; "
           "the on-call engineer rolled the certificate back and wrote a postmortem the same day.")


def result(chunk_id: str, document_id: str, text: str, entity_id: str = "e1", position: int = 0) -> dict:
    return {"chunk_id": chunk_id, "document_id": document_id, "entity_id": entity_id, "position": position,
            "text": text}


def ranked(*rows: dict) -> list[state.Candidate]:
    return [state.candidate(r, tokens=10) for r in rows]


def distinct(n: int, document: str = "d") -> list[dict]:
    return [result(f"c{i}", f"{document}{i}", f"passage number {i} about topic {i * 7} " * 3) for i in range(n)]


def test_a_second_step_leaves_out_the_first_steps_chunks_and_fills_k_from_deeper():
    t = state.Trajectory("t", "key")
    rows = distinct(6)
    first = state.take_step(t, ranked(*rows), k=3, seen="exclude")
    assert [r["chunk_id"] for r in first.results] == ["c0", "c1", "c2"]
    state.record(t, "q1", first.answered, first.novelty, 30)
    second = state.take_step(t, ranked(*rows), k=3, seen="exclude")
    assert [r["chunk_id"] for r in second.results] == ["c3", "c4", "c5"]
    assert second.left_out == 3
    assert second.novelty == {"chunks": 0.0, "documents": 0.0}  # a plain search would repeat all three
    assert first.novelty == {"chunks": 1.0, "documents": 1.0}


def test_copies_across_documents_count_once():
    t = state.Trajectory("t", "key")
    # re-cased and one word added: near for any hash seeds (a word replaced in a 30-word passage is
    # a coin toss at NEAR_BITS, whatever the seeds)
    mirrored = PASSAGE.upper() + " (mirrored)"
    rows = [result("a", "doc-a", PASSAGE), result("b", "doc-b", PASSAGE.replace(";", ",")),
            result("c", "doc-c", mirrored), result("d", "doc-d", "something else entirely, about bread and ovens")]
    answer = state.take_step(t, ranked(*rows), k=2, seen="exclude")
    assert [r["chunk_id"] for r in answer.results] == ["a", "d"]
    assert answer.left_out == 2
    assert answer.novelty["chunks"] == 0.5  # of the plain top 2, the second copies the first


def test_include_returns_repeats_and_mark_flags_them():
    t = state.Trajectory("t", "key")
    rows = distinct(3)
    state.record(t, "q", ranked(rows[0]), {"chunks": 1.0, "documents": 1.0}, 10)
    included = state.take_step(t, ranked(*rows), k=2, seen="include")
    assert [r["chunk_id"] for r in included.results] == ["c0", "c1"]
    assert "seen" not in included.results[0]
    marked = state.take_step(t, ranked(*rows), k=2, seen="mark")
    assert [(r["chunk_id"], r["seen"]) for r in marked.results] == [("c0", True), ("c1", False)]
    assert marked.novelty["chunks"] == 0.5


def test_document_novelty_counts_documents_the_trajectory_has_not_touched():
    t = state.Trajectory("t", "key")
    state.record(t, "q", ranked(result("x", "report", "the first section of the report, about revenue")),
                 {"chunks": 1.0, "documents": 1.0}, 10)
    rows = [result("y", "report", "the second section of the report, about costs", position=1),
            result("z", "memo", "an unrelated memo about parking spaces")]
    answer = state.take_step(t, ranked(*rows), k=2, seen="exclude")
    assert answer.novelty == {"chunks": 1.0, "documents": 0.5}


def test_recording_keeps_tokens_steps_and_the_first_step_of_each_chunk():
    t = state.Trajectory("t", "key")
    rows = distinct(2)
    state.record(t, "q1", ranked(rows[0]), {"chunks": 1.0, "documents": 1.0}, 10)
    state.record(t, "q2", ranked(*rows), {"chunks": 0.5, "documents": 0.5}, 20)
    assert t.tokens == 30 and [s.query for s in t.steps] == ["q1", "q2"]
    assert t.chunks["c0"].step == 1 and t.chunks["c1"].step == 2
    assert t.documents() == [("e1", "d0"), ("e1", "d1")]


def test_an_empty_answer_has_no_novelty():
    answer = state.take_step(state.Trajectory("t", "key"), [], k=5, seen="exclude")
    assert answer.results == [] and answer.novelty == {"chunks": 0.0, "documents": 0.0}


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("rolled", "has rolled"),
    lambda s: "Incident report. " + s,
    lambda s: s.lower().replace(",", ""),
])
def test_near_copies_are_near(edit):
    assert copies.near(copies.simhash(PASSAGE), copies.simhash(edit(PASSAGE)))


def test_different_passages_on_one_subject_are_not_copies():
    other = ("A certificate rotation on the payment gateway is scheduled every ninety days; the runbook lists "
             "who approves it and how to test the new certificate in staging first.")
    assert copies.fingerprint(PASSAGE) != copies.fingerprint(other)
    assert not copies.near(copies.simhash(PASSAGE), copies.simhash(other))


def test_short_texts_are_compared_exactly_only():
    assert copies.simhash("502 errors") is None
    assert copies.fingerprint("502 Errors!") == copies.fingerprint("502 errors")


def test_a_stored_trajectory_is_what_asdict_makes_of_it_and_loads_back():
    import dataclasses

    from edgeindex.trajectories.store import _dump, _load

    trajectory = state.Trajectory("t-1", "key_1")
    state.record(trajectory, "first question", ranked(result("c1", "d1", PASSAGE, position=3)),
                 {"chunks": 1.0, "documents": 1.0}, 10)
    assert _dump(trajectory) == dataclasses.asdict(trajectory)
    assert _load(_dump(trajectory)) == trajectory


@pytest.mark.parametrize("others", [3, copies.CopyIndex.SCAN_IN_PYTHON + 50])
def test_the_copy_index_finds_a_near_copy_among_few_and_among_many(others):
    index = copies.CopyIndex()
    for i in range(others):
        text = f"unrelated passage {i} about subject {i * 31} and its own words {i * 17} here"
        index.add(copies.fingerprint(text), copies.simhash(text))
    edited = PASSAGE.replace("rolled", "has rolled")
    assert not index.near(copies.simhash(edited))
    index.add(copies.fingerprint(PASSAGE), copies.simhash(PASSAGE))
    assert index.near(copies.simhash(edited))
    far = "A different text: the bakery on the corner sells rye bread and seeded rolls every morning."
    assert not index.near(copies.simhash(far))
