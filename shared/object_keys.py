"""Names derived from (entity, document, version): object keys, run ids, artifact prefixes.

Entity ids are restricted to a key-safe alphabet (``validation.ENTITY_ID_PATTERN``).
Document ids may be anything a corpus uses (``reports/2025/q3.pdf``, URLs, ``..``),
so they never appear raw in a key: their segment is ``=`` + the base64url of their
UTF-8 (no ``/``, no ``.``, reversible for the bucket's events). Every prefix below
is unambiguous and per-document clean-up is a prefix delete. Keys written before
this encoding (a raw id, which never starts with ``=``) still parse.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, replace
from urllib.parse import unquote_plus

from .errors import ValidationError

DOCS_PREFIX = "docs/"          # the bucket's event notification watches this prefix
ARTIFACTS_PREFIX = "artifacts/"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# v<version>, then (newer keys) -<the first 8 hex digits of the document's generation>
_VERSION = re.compile(r"^v([1-9][0-9]{0,8})(?:-([0-9a-f]{8}))?$")


def safe_filename(name: str | None, default: str = "document") -> str:
    """A file name usable in an object key: the last path part, odd characters replaced."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE.sub("_", base).strip("._")[:120]
    return cleaned or default


def document_segment(document_id: str) -> str:
    """A document id as one key segment: ``=`` + base64url (no padding) of its UTF-8."""
    return "=" + base64.urlsafe_b64encode(document_id.encode("utf-8")).decode("ascii").rstrip("=")


def parse_document_segment(segment: str) -> str:
    if not segment.startswith("="):
        return segment  # written before document ids were encoded
    body = segment[1:]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValidationError(f"object key segment {segment!r} is not an encoded document id", field="key") from None


def object_key(entity_id: str, document_id: str, version: int, filename: str, generation: str | None = None) -> str:
    """The object of one version of one life of a document. The generation (see migration 0002) makes a
    key unique even when a deleted id is uploaded again: a late write or event of the deleted life can
    then never land on, or be taken for, the new one's object."""
    segment = f"v{version}-{str(generation)[:8]}" if generation else f"v{version}"
    return f"{DOCS_PREFIX}{entity_id}/{document_segment(document_id)}/{segment}/{filename}"


def document_objects_prefix(entity_id: str, document_id: str) -> str:
    return f"{DOCS_PREFIX}{entity_id}/{document_segment(document_id)}/"


@dataclass(frozen=True)
class ObjectRef:
    """What an object key says: whose document, which version."""

    key: str
    entity_id: str
    document_id: str
    version: int
    size: int | None = None  # as reported by the event, when there is one
    generation: str | None = None  # first 8 hex digits of the document's generation; None in older keys

    def of_generation(self, generation: str) -> bool:
        """Whether this object belongs to the document life ``generation`` (older keys: assumed so)."""
        return self.generation is None or str(generation).startswith(self.generation)


def with_size(ref: ObjectRef, size) -> ObjectRef:
    return replace(ref, size=int(size)) if isinstance(size, int) and size >= 0 else ref


def parse_object_key(raw_key: str) -> ObjectRef:
    """Parse ``docs/{entity}/{document}/v{version}[-{generation}]/{filename}`` (URL-encoded as in S3 events)."""
    key = unquote_plus(raw_key)
    parts = key.split("/")
    if len(parts) != 5 or parts[0] + "/" != DOCS_PREFIX or not all(parts[1:]):
        raise ValidationError(f"object key {key!r} is not docs/<entity>/<document>/v<version>/<file>", field="key")
    match = _VERSION.match(parts[3])
    if not match:
        raise ValidationError(f"object key {key!r} has no version part v<n>", field="key")
    return ObjectRef(key=key, entity_id=parts[1], document_id=parse_document_segment(parts[2]),
                     version=int(match.group(1)), generation=match.group(2))


def run_prefix(entity_id: str, document_id: str) -> str:
    return f"ingest/{entity_id}/{document_segment(document_id)}/"


def run_id(entity_id: str, document_id: str, version: int, generation: str) -> str:
    """One durable run per document version (and generation: see migration 0002)."""
    return f"{run_prefix(entity_id, document_id)}v{version}/{str(generation)[:8]}"


def artifacts_prefix(entity_id: str, document_id: str) -> str:
    return f"{ARTIFACTS_PREFIX}{entity_id}/{document_segment(document_id)}/"


def run_artifacts_prefix(entity_id: str, document_id: str, version: int, generation: str) -> str:
    return f"{artifacts_prefix(entity_id, document_id)}v{version}-{str(generation)[:8]}/"


def of_generation(key: str, generation: str) -> bool:
    """Whether an object or artifact key of a document belongs to its life ``generation``. Keys that
    name no generation (written before keys did) are taken as belonging: no new life writes them."""
    gen = str(generation)[:8]
    if key.startswith(ARTIFACTS_PREFIX):
        parts = key.split("/")
        segment = parts[3] if len(parts) > 3 else ""
        return segment.endswith(f"-{gen}")
    try:
        ref = parse_object_key(key)
    except ValidationError:
        return False
    return ref.generation is None or ref.generation == gen
