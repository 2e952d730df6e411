"""A migration's checksum covers what it runs, not how it is explained."""

from edgeindex.bindings.database import Migration, discover, migrations_folder


def write(tmp_path, text: str) -> Migration:
    path = tmp_path / "0001_init.sql"
    path.write_text(text)
    return Migration(1, "init", path)


def test_comment_edits_keep_the_checksum(tmp_path):
    before = write(tmp_path, "-- the first table\nCREATE TABLE t (id int);\n").checksum()
    after = write(tmp_path, "-- the first table, keyed by id\n\n  -- why\nCREATE TABLE t (id int);   \n").checksum()
    assert before == after


def test_statement_edits_change_the_checksum(tmp_path):
    before = write(tmp_path, "CREATE TABLE t (id int);\n").checksum()
    after = write(tmp_path, "CREATE TABLE t (id bigint);\n").checksum()
    assert before != after
    # a comment at the end of a statement's line is part of the line: only whole-line comments are free
    assert write(tmp_path, "CREATE TABLE t (id int); -- x\n").checksum() != write(tmp_path, "CREATE TABLE t (id int);\n").checksum()


def test_packaged_migrations_are_found():
    versions = [m.version for m in discover(migrations_folder())]
    assert versions == sorted(versions) and versions[0] == 1 and len(versions) >= 20
