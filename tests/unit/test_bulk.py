"""Pure parts of the bulk route and of the SDK's grouping of files into bulk requests."""

from __future__ import annotations

import pytest
from edgeindex_client._ops import bulk_batches, bulk_document

from edgeindex.errors import UnsupportedMediaType, ValidationError
from edgeindex.uploads.bulk import MAX_BULK_DOCUMENTS, check_media_type, parse_lines


def test_lines_are_numbered_blank_ones_skipped_and_bad_ones_reported_alone():
    parsed = parse_lines(b'{"document_id": "a", "text": "x"}\n\n[1, 2]\n{oops\n{"document_id": "b", "text": "y"}\n')
    assert [n for n, _ in parsed] == [1, 3, 4, 5]
    assert parsed[0][1] == {"document_id": "a", "text": "x"}
    assert isinstance(parsed[1][1], ValidationError) and "line 3" in parsed[1][1].message
    assert isinstance(parsed[2][1], ValidationError) and "line 4" in parsed[2][1].message
    assert parsed[3][1]["document_id"] == "b"


@pytest.mark.parametrize("body", [b"", b"\n  \n", b"\xff\xfe", b'{"a": 1}\n' * (MAX_BULK_DOCUMENTS + 1)])
def test_a_body_that_holds_no_usable_lines_or_too_many_is_refused(body):
    with pytest.raises(ValidationError) as error:
        parse_lines(body)
    assert error.value.field == "body"


def test_only_ndjson_media_types_are_taken():
    check_media_type("application/x-ndjson; charset=utf-8")
    with pytest.raises(UnsupportedMediaType):
        check_media_type("application/json")


def test_files_are_grouped_within_both_limits_in_order():
    assert bulk_batches([1, 1, 1, 1, 1], max_documents=2, max_bytes=100) == [[0, 1], [2, 3], [4]]
    assert bulk_batches([60, 50, 10, 90], max_documents=10, max_bytes=100) == [[0], [1, 2], [3]]
    assert bulk_batches([], max_documents=2, max_bytes=10) == []


def test_text_goes_as_text_and_other_bytes_as_base64():
    assert bulk_document("a", "héllo".encode(), content_type="text/plain").text == "héllo"
    binary = bulk_document("b", b"%PDF\xff", content_type="application/pdf")
    assert (binary.text, binary.content_base64) == (None, "JVBERv8=")
    latin1 = bulk_document("c", "é".encode("latin-1"), content_type="text/plain")
    assert latin1.text is None and latin1.content_base64 == "6Q=="


def test_a_line_is_unchanged_only_with_the_ready_versions_bytes_type_and_fields():
    from edgeindex.uploads.bulk import BulkDocument, _unchanged
    from edgeindex.validation import content_hash

    row = {"status": "ready", "version": 2, "ready_version": 2, "content_hash": content_hash(b"same"),
           "content_type": "text/plain", "title": "T", "source": None, "tags": ["a"]}
    doc = BulkDocument(document_id="d", text="same")
    assert _unchanged(row, doc, b"same")
    assert _unchanged(row, BulkDocument(document_id="d", text="same", title="T", tags=["a"]), b"same")
    assert not _unchanged(row, doc, b"other")
    assert not _unchanged(row, BulkDocument(document_id="d", text="same", title="New"), b"same")
    assert not _unchanged(row, BulkDocument(document_id="d", text="same", content_type="text/markdown"), b"same")
    assert not _unchanged({**row, "version": 3}, doc, b"same")  # a newer version is on its way
    assert not _unchanged({**row, "status": "processing"}, doc, b"same")
    assert not _unchanged(None, doc, b"same")
