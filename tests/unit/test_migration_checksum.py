"""A migration's checksum covers its statements, not its comments (bindings/database.py Migration)."""

from __future__ import annotations

from edgeindex.bindings.database import STATEMENTS_CHECKSUM, Migration


def checksum_of(tmp_path, text: str) -> str:
    path = tmp_path / "0001_x.sql"
    path.write_text(text, encoding="utf-8")
    return Migration(1, "x", path).checksum()


def test_reworded_comments_keep_the_checksum(tmp_path):
    original = checksum_of(tmp_path, "-- why, as first written\nCREATE TABLE t (a int);\n")
    assert original.startswith(STATEMENTS_CHECKSUM)
    assert checksum_of(tmp_path, "-- why, said another way\n--\n\nCREATE TABLE t (a int);   \n") == original


def test_a_changed_statement_changes_the_checksum(tmp_path):
    original = checksum_of(tmp_path, "-- why\nCREATE TABLE t (a int);\n")
    assert checksum_of(tmp_path, "-- why\nCREATE TABLE t (a bigint);\n") != original
    # a comment at the end of a statement's line is part of that line, so it counts
    assert checksum_of(tmp_path, "-- why\nCREATE TABLE t (a int); -- note\n") != original


def test_packaged_migrations_are_found():
    from edgeindex.bindings.database import discover, migrations_folder

    versions = [m.version for m in discover(migrations_folder())]
    assert versions == sorted(versions) and versions[0] == 1 and len(versions) >= 20
