"""Text extraction: every supported type, and every way a file can be unusable."""

from __future__ import annotations

import json
import random

import pytest
from edgeindex.errors import IngestError
from edgeindex.ingest.extract import decode_text, extract, normalize_text

from ..helpers import make_pdf


def test_plain_text_is_normalized():
    raw = "\ufeffTitle line  \r\n\r\n\r\n\r\nBody\twith   blanks\u00a0here.\rLast line\n\n"
    assert extract(raw.encode(), "text/plain").text == "Title line\n\nBody with blanks here.\nLast line"


def test_normalization_is_nfc():
    assert normalize_text("cafe\u0301") == "caf\u00e9"


def test_markdown_keeps_its_markup():
    markdown = b"# Heading\n\nSome *emphasis* and a [link](http://x).\n\n- item one\n- item two"
    text = extract(markdown, "text/markdown").text
    assert text.startswith("# Heading") and "- item two" in text


def test_html_visible_text_paragraphs_and_title():
    html = b"""<html><head><title>Cats &amp; dogs</title><style>p { color: red }</style>
    <script>var hidden = 1;</script></head><body><h1>Pets</h1><p>Cats are <b>great</b>.</p>
    <!-- a comment --><div>Dogs<br>are loyal</div><ul><li>one</li><li>two</li></ul><noscript>no js</noscript>
    <table><tr><th>name</th><th>legs</th></tr><tr><td>cat</td><td>4</td></tr></table></body></html>"""
    result = extract(html, "text/html")
    assert result.title == "Cats & dogs"
    assert result.text == "Pets\n\nCats are great.\n\nDogs\nare loyal\n\none\n\ntwo\n\nname legs\n\ncat 4"


def test_deeply_nested_html_does_not_recurse():
    html = ("<div>" * 5000 + "deep text" + "</div>" * 5000).encode()
    assert extract(html, "text/html").text == "deep text"


def test_json_becomes_path_value_lines():
    doc = {"name": "edgeindex", "version": 2, "tags": ["search", "agents"], "owner": {"team": "core", "x": None}}
    assert extract(json.dumps(doc).encode(), "application/json").text == (
        "name: edgeindex\nversion: 2\ntags[0]: search\ntags[1]: agents\nowner.team: core")


def test_json_list_of_records_becomes_paragraphs():
    text = extract(b'[{"q": "first"}, {"q": "second"}]', "application/json").text
    assert text == "[0].q: first\n\n[1].q: second"


def test_pdf_text_pages_and_title():
    pdf = make_pdf([["Hello PDF world.", "Second line."], ["Page two text."]], title="My report")
    result = extract(pdf, "application/pdf")
    assert "Hello PDF world." in result.text and "Page two text." in result.text
    assert result.text.index("Second line.") < result.text.index("Page two text.")
    assert result.title == "My report"


@pytest.mark.parametrize("data,content_type,reason", [
    (b"", "text/plain", "the file is empty"),
    (b"   \n\n\t  ", "text/plain", "no text"),
    (b"<html><body><script>x()</script></body></html>", "text/html", "no text"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/plain", "binary data (it contains NUL bytes)"),
    ("caf\u00e9 na\u00efve".encode("latin-1"), "text/plain", "not valid UTF-8 text (byte 0xe9 at offset 3)"),
    ("hello".encode("utf-16"), "text/markdown", "UTF-16"),
    (b"%PDF-1.7\nthis is not really a pdf at all", "application/pdf", "the PDF could not be parsed"),
    (b"plain text pretending", "application/pdf", "not a PDF"),
    (b'{"unterminated": ', "application/json", "not valid JSON"),
    (b"text", "application/zip", "not supported"),
])
def test_unusable_files_fail_with_a_reason(data, content_type, reason):
    with pytest.raises(IngestError) as err:
        extract(data, content_type)
    assert reason in err.value.message


def test_random_bytes_are_refused_as_binary_or_not_utf8():
    garbage = random.Random(7).randbytes(4096)
    with pytest.raises(IngestError) as err:
        extract(garbage, "text/plain")
    assert "binary" in err.value.message or "not valid UTF-8" in err.value.message


def test_control_characters_mean_binary():
    data = ("text " + "\x01\x02\x03" * 50).encode()
    with pytest.raises(IngestError, match="control characters"):
        decode_text(data)


def test_pdf_without_text_says_so():
    with pytest.raises(IngestError, match="no extractable text"):
        extract(make_pdf([[]]), "application/pdf")
