"""What the ingest worker remembers for diagnostics stays bounded over a long life (soak: flat memory)."""

from collections import OrderedDict

from edgeindex.ingest.service import _remember


def test_remember_keeps_only_the_latest_items_of_one_key():
    table: OrderedDict = OrderedDict()
    for n in range(500):
        _remember(table, ("tenant", "doc"), {"version": n}, keep=10, per_key=20)
    assert [i["version"] for i in table[("tenant", "doc")]] == list(range(480, 500))


def test_remember_keeps_only_the_most_recently_touched_keys():
    table: OrderedDict = OrderedDict()
    for n in range(30):
        _remember(table, f"run-{n}", ["extract"], keep=10, per_key=5)
    _remember(table, "run-25", ["embed"], keep=10, per_key=5)  # touched again: now the newest
    _remember(table, "run-30", ["extract"], keep=10, per_key=5)
    assert list(table) == [f"run-{n}" for n in (21, 22, 23, 24, 26, 27, 28, 29, 25, 30)]
    assert table["run-25"] == [["extract"], ["embed"]]
