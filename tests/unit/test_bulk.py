"""Pure parts of the bulk route and of the SDK's grouping of files into bulk requests."""

from __future__ import annotations

import json

import pytest
from edgeindex.errors import UnsupportedMediaType, ValidationError
from edgeindex.json_codec import check_json_value
from edgeindex.uploads.bulk import MAX_BULK_DOCUMENTS, check_media_type, parse_lines
from edgeindex_client._ops import bulk_batches, bulk_document


def test_lines_are_numbered_blank_ones_skipped_and_bad_ones_reported_alone():
    parsed = parse_lines(b'{"document_id": "a", "text": "x"}\n\n[1, 2]\n{oops\n{"document_id": "b", "text": "y"}\n')
    assert [n for n, _ in parsed] == [1, 3, 4, 5]
    assert parsed[0][1] == {"document_id": "a", "text": "x"}
    assert isinstance(parsed[1][1], ValidationError) and "line 3" in parsed[1][1].message
    assert isinstance(parsed[2][1], ValidationError) and "line 4" in parsed[2][1].message
    assert parsed[3][1]["document_id"] == "b"


@pytest.mark.parametrize("body", [b"", b"\n  \n", b'{"a": 1}\n' * (MAX_BULK_DOCUMENTS + 1)])
def test_a_body_that_holds_no_usable_lines_or_too_many_is_refused(body):
    with pytest.raises(ValidationError) as error:
        parse_lines(body)
    assert error.value.field == "body"


def test_a_line_nothing_downstream_can_store_is_that_lines_error_alone():
    good = b'{"document_id": "a", "text": "x"}'
    bad = [b"\xff\xfe", b"[" * 100_000, b'{"document_id": "a\\u0000b", "text": "x"}',
           b'{"document_id": "a\\ud800b", "text": "x"}', b'{"document_id": ' + b"[" * 40 + b"1" + b"]" * 40 + b"}"]
    parsed = parse_lines(b"\n".join([good, *bad, good]), check_json_value)
    assert parsed[0][1] == parsed[-1][1] == {"document_id": "a", "text": "x"}
    errors = [line for _, line in parsed[1:-1]]
    assert all(isinstance(e, ValidationError) for e in errors), errors
    assert [e.field for e in errors[:4]] == ["body", "body", "document_id", "document_id"]
    assert errors[4].field.startswith("document_id.0.0")


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


def test_a_line_holding_unicode_line_separators_stays_one_document():
    # U+0085 (found in MS MARCO passages) and U+2028 are valid raw inside JSON strings; only "\n" ends a line.
    first = json.dumps({"document_id": "a", "text": "one\u0085two\u2028three"}, ensure_ascii=False)
    body = (first + "\r\n" + json.dumps({"document_id": "b", "text": "x"}) + "\n").encode()
    parsed = parse_lines(body)
    assert [n for n, _ in parsed] == [1, 2]
    assert parsed[0][1] == {"document_id": "a", "text": "one\u0085two\u2028three"}
    assert parsed[1][1] == {"document_id": "b", "text": "x"}


def _drive(op, reply=None, error: Exception | None = None):
    """Run an SDK operation by hand: its one request answered with ``reply`` or failed with ``error``."""
    from edgeindex_client._ops import Reply

    call = next(op)
    assert (call.method, call.headers["Content-Type"]) == ("POST", "application/x-ndjson")
    try:
        op.throw(error) if error is not None else op.send(Reply(200, {}, reply))
    except StopIteration as stop:
        return call, stop.value
    raise AssertionError("the operation asked for more than one request")


def test_bulk_files_get_one_outcome_each_and_a_failed_request_reports_on_every_file(tmp_path):
    from edgeindex_client._ops import upload_bulk_files
    from edgeindex_client.files import FileToUpload

    files = [FileToUpload(tmp_path / f"{n}.txt", n, None) for n in ("a", "b")]
    op = upload_bulk_files("e1", files, [b"alpha", b"beta"], skip_unchanged=True, source=None, tags=None,
                           collection=None)
    reply = {"entity_id": "e1", "accepted": 1, "unchanged": 0, "failed": 1, "results": [
        {"line": 1, "document_id": "a", "outcome": "accepted", "status": 202, "version": 1,
         "document_status": "pending"},
        {"line": 2, "document_id": "b", "outcome": "failed", "status": 400,
         "error": {"error": "validation_error", "message": "bad line", "field": "text"}}]}
    call, outcomes = _drive(op, reply)
    assert [json.loads(line)["document_id"] for line in call.content.decode().splitlines()] == ["a", "b"]
    assert [(o.document_id, o.ok) for o in outcomes] == [("a", True), ("b", False)]
    assert outcomes[0].document.version == 1 and "bad line" in str(outcomes[1].error)

    op = upload_bulk_files("e1", files, [b"alpha", b"beta"], skip_unchanged=True, source=None, tags=None,
                           collection=None)
    _, outcomes = _drive(op, error=ConnectionError("connection reset"))
    assert [str(o.error) for o in outcomes] == ["connection reset", "connection reset"]
