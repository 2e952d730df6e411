"""``history.changes.compare``: two versions' chunks aligned by content hash; what is equal stays,
what differs pairs up in order as changed, the rest is added or removed."""

from __future__ import annotations

from edgeindex.history.changes import VersionChunk, compare
from hypothesis import given
from hypothesis import strategies as st


def version(*texts: str) -> list[VersionChunk]:
    return [VersionChunk(i, f"id-{t}-{i}", t, f"h-{t}") for i, t in enumerate(texts)]


def test_an_edited_chunk_is_changed_with_its_previous_text():
    found = compare(version("a", "b", "c"), version("a", "B", "c"))
    assert [(c["previous"]["text"], c["text"]) for c in found["changed"]] == [("b", "B")]
    assert (found["added"], found["removed"], found["unchanged"], found["moved"]) == ([], [], 2, 0)


def test_inserted_and_deleted_chunks_are_added_and_removed_and_the_rest_moves():
    found = compare(version("a", "b", "c"), version("x", "a", "c"))
    assert [c["text"] for c in found["added"]] == ["x"]
    assert [c["text"] for c in found["removed"]] == ["b"]
    assert found["changed"] == [] and found["unchanged"] == 2 and found["moved"] == 1  # a: 0 → 1


def test_a_version_against_nothing_is_all_added():
    found = compare([], version("a", "b"))
    assert [c["position"] for c in found["added"]] == [0, 1] and found["unchanged"] == 0


TEXTS = st.lists(st.sampled_from("abcdef"), max_size=12)


@given(before=TEXTS, after=TEXTS)
def test_the_changes_account_for_every_chunk_of_both_versions(before, after):
    found = compare(version(*before), version(*after))
    kept = found["unchanged"]
    assert kept + len(found["removed"]) + len(found["changed"]) == len(before)
    assert kept + len(found["added"]) + len(found["changed"]) == len(after)
    # the texts of the later version are exactly the kept ones plus the added and changed ones
    gone = [c["text"] for c in found["removed"]] + [c["previous"]["text"] for c in found["changed"]]
    remaining = list(before)
    for text in gone:
        remaining.remove(text)
    assert sorted(remaining + [c["text"] for c in found["added"] + found["changed"]]) == sorted(after)
