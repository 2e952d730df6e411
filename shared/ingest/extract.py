"""Text out of an uploaded file: plain text, Markdown, HTML, PDF, JSON.

Every way a file can be unusable (empty, binary, not UTF-8, a PDF that does not
parse, no text at all) raises ``IngestError`` with a reason a person can act
on; the document is marked failed and the worker goes on with the next one.
The text is normalized (newlines, runs of blanks, NFC) so chunk offsets refer
to a stable string.
"""

from __future__ import annotations

import io
import json
import logging
import re
import unicodedata
from dataclasses import dataclass

from ..errors import IngestError

log = logging.getLogger(__name__)

TEXT_TYPES = ("text/plain", "text/markdown")
SUPPORTED_TYPES = (*TEXT_TYPES, "text/html", "application/pdf", "application/json")

_SNIFF_BYTES = 8192
_MAX_CONTROL_RATIO = 0.01  # share of control characters above which "text" is really binary
_BLANKS = re.compile(r"[^\S\n]+")           # horizontal whitespace runs (unicode-aware)
_MANY_NEWLINES = re.compile(r"\n{3,}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")

# Elements whose content is not text a reader sees.
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas", "-comment"}
# Elements that end a paragraph; everything else is inline.
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "dd", "details", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol",
    "p", "pre", "section", "summary", "table", "tr", "ul", "caption", "tbody", "thead", "tfoot", "body", "html",
}
_CELL_TAGS = {"td", "th"}  # cells of a row stay on one line


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str = ""   # a title found in the file (HTML <title>, PDF metadata), if any


def normalize_text(text: str) -> str:
    """One canonical form: NFC, ``\\n`` newlines, single blanks, at most one empty line in a row."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (_BLANKS.sub(" ", line).strip() for line in text.split("\n"))
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def decode_text(data: bytes) -> str:
    """Strict UTF-8 (a BOM is dropped); binary data and other encodings are refused with the reason."""
    head = data[:_SNIFF_BYTES]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise IngestError("the file is UTF-16 text; only UTF-8 is supported: convert it to UTF-8 and upload again")
    if b"\x00" in head:
        raise IngestError("the file looks like binary data (it contains NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 1].hex()
        raise IngestError(f"the file is not valid UTF-8 text (byte 0x{bad} at offset {exc.start}): "
                          "convert it to UTF-8 and upload again") from None
    sample = text[:_SNIFF_BYTES]
    controls = len(_CONTROL.findall(sample))
    if sample and controls / len(sample) > _MAX_CONTROL_RATIO:
        raise IngestError(f"the file looks like binary data ({controls} control characters in its first "
                          f"{len(sample)} characters), not text")
    return text


def html_to_text(html: str) -> Extracted:
    """Visible text of an HTML page, paragraphs kept apart; the <title> separately."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = normalize_text(title_node.text()) if title_node is not None else ""
    root = tree.body or tree.root
    parts: list[str] = []
    if root is not None:
        # Explicit stack instead of recursion: deeply nested pages must not hit the recursion limit.
        stack: list[tuple[object, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            tag = node.tag
            if leaving:
                parts.append("\n\n" if tag in _BLOCK_TAGS else " ")
                continue
            if node.is_text_node:
                parts.append(node.text(deep=False))
                continue
            if tag in _SKIP_TAGS or not node.is_element_node:
                continue
            if tag == "br":
                parts.append("\n")
            elif tag in _BLOCK_TAGS:
                parts.append("\n\n")
                stack.append((node, True))
            elif tag in _CELL_TAGS:
                stack.append((node, True))
            children = []
            child = node.child
            while child is not None:
                children.append(child)
                child = child.next
            stack.extend((c, False) for c in reversed(children))
    return Extracted(normalize_text("".join(parts)), title)


def pdf_to_text(data: bytes) -> Extracted:
    from pypdf import PdfReader

    if not data[:1024].lstrip().startswith(b"%PDF-"):
        raise IngestError("the file is not a PDF (it does not start with %PDF-)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise IngestError("the PDF is encrypted with a password; upload a decrypted copy")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except IngestError:
        raise
    except Exception as exc:  # pypdf raises many types for broken files; all mean "cannot parse"
        raise IngestError(f"the PDF could not be parsed: {type(exc).__name__}: {exc}") from None
    if not pages:
        raise IngestError("the PDF has no pages")
    text = normalize_text("\n\n".join(pages))
    if not text:
        raise IngestError(f"the PDF's {len(pages)} page(s) hold no extractable text (scanned images need OCR first)")
    return Extracted(text, normalize_text(str(meta_title)) if meta_title else "")


def _json_lines(value, path: str):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_lines(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _json_lines(item, f"{path}[{i}]")
    elif value is None:
        return
    else:
        shown = value if isinstance(value, str) else json.dumps(value)
        yield f"{path}: {shown}" if path else shown


def json_to_text(text: str) -> Extracted:
    """One ``path: value`` line per leaf; top-level records become paragraphs."""
    try:
        value = json.loads(text)
        if isinstance(value, list):
            blocks = ["\n".join(_json_lines(item, f"[{i}]")) for i, item in enumerate(value)]
        else:
            blocks = ["\n".join(_json_lines(value, ""))]
    except json.JSONDecodeError as exc:
        raise IngestError(f"the file is not valid JSON: {exc}") from None
    except RecursionError:  # a content problem like any other: permanent on the first attempt
        raise IngestError("the JSON document is nested too deeply to index") from None
    return Extracted(normalize_text("\n\n".join(b for b in blocks if b)))


def extract(data: bytes, content_type: str) -> Extracted:
    """The document's text, or IngestError saying why there is none."""
    if not data:
        raise IngestError("the file is empty")
    if content_type == "application/pdf":
        result = pdf_to_text(data)
    else:
        decoded = decode_text(data)
        if content_type == "text/html":
            result = html_to_text(decoded)
        elif content_type == "application/json":
            result = json_to_text(decoded)
        elif content_type in TEXT_TYPES:
            result = Extracted(normalize_text(decoded))
        else:
            raise IngestError(f"content type {content_type!r} is not supported "
                              f"(supported: {', '.join(SUPPORTED_TYPES)})")
    if not result.text:
        raise IngestError("the file holds no text (only whitespace or markup)")
    return result
