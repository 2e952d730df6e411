"""Upload URLs that the upload worker itself verifies, for object stores that check nothing.

Real S3 and R2 verify a presigned URL's signature, expiry, key and signed headers. The
embedded moto server verifies none of them: a forged signature, an expired URL, another
key or another content type are all accepted. With ``services.s3.uploads = "worker"``
(the default under ``edgeindex dev``) an upload request hands out a URL of the upload
worker instead, ``PUT /uploads/{token}``, where the token carries what was issued —
object key, document version, content type, exact size (or a part's maximum), expiry,
multipart upload id and part number — signed with HMAC-SHA256. The worker checks all of
it, and that the version is still waiting for these bytes, before it streams them to
the bucket: a URL is exactly as binding as on real S3, and a little more (the size).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import asdict, dataclass

from ..errors import Forbidden, ValidationError


@dataclass(frozen=True)
class UploadGrant:
    """What one upload URL allows."""

    entity_id: str
    document_id: str
    version: int
    object_key: str
    content_type: str
    size: int                    # exact bytes of a single PUT; the most a part may carry
    expires_at: int              # unix seconds
    upload_id: str | None = None
    part_number: int | None = None

    @property
    def is_part(self) -> bool:
        return self.part_number is not None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class UploadSigner:
    """Signs and verifies upload grants with one deployment secret."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("an upload signing secret is required")
        self._key = hashlib.sha256(b"edgeindex upload url\x00" + secret.encode()).digest()

    def _mac(self, payload: bytes) -> str:
        return _b64(hmac.new(self._key, payload, hashlib.sha256).digest())

    def sign(self, grant: UploadGrant) -> str:
        payload = json.dumps(asdict(grant), separators=(",", ":"), sort_keys=True).encode()
        return f"{_b64(payload)}.{self._mac(payload)}"

    def verify(self, token: str, *, now: float | None = None) -> UploadGrant:
        """The grant, or 403: a token that was not issued here, or altered, or expired."""
        body, _, mac = token.partition(".")
        try:
            payload = _unb64(body)
        except (ValueError, TypeError):
            raise Forbidden("upload URL: malformed signature", field="signature") from None
        if not mac or not hmac.compare_digest(self._mac(payload), mac):
            raise Forbidden("upload URL: the signature does not match (altered or not issued here)",
                            field="signature")
        try:
            grant = UploadGrant(**json.loads(payload))
        except (ValueError, TypeError):
            raise Forbidden("upload URL: malformed grant", field="signature") from None
        if (now if now is not None else time.time()) > grant.expires_at:
            raise Forbidden(f"upload URL expired at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(grant.expires_at))};"
                            " request a new upload", field="expires")
        return grant

    def check_request(self, grant: UploadGrant, *, content_type: str | None, length: int | None) -> None:
        """What S3 checks of a presigned PUT's signed headers, plus its declared size."""
        if not grant.is_part:
            got = (content_type or "").partition(";")[0].strip().lower()
            if got != grant.content_type:
                raise Forbidden(f"upload URL was issued for Content-Type {grant.content_type!r}, got {got!r}",
                                field="Content-Type")
        if length is not None and (length > grant.size or (not grant.is_part and length != grant.size)):
            raise ValidationError(f"body: {length} bytes; this upload URL takes "
                                  f"{'at most ' if grant.is_part else 'exactly '}{grant.size}", field="body")
