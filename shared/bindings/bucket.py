"""Object storage binding (R2-like) over any S3 endpoint through boto3."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..errors import ObjectStoreError
from . import aws


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str
    content_type: str | None = None
    metadata: dict[str, str] | None = None
    last_modified: datetime | None = None


class Bucket(Protocol):
    name: str

    async def put(self, key: str, body: bytes, *, content_type: str | None = None,
                  metadata: dict[str, str] | None = None) -> ObjectInfo: ...
    async def get(self, key: str) -> bytes | None: ...
    async def read(self, key: str) -> tuple[bytes, ObjectInfo] | None: ...
    async def head(self, key: str) -> ObjectInfo | None: ...
    async def delete(self, *keys: str) -> None: ...
    async def list(self, prefix: str = "") -> list[ObjectInfo]: ...
    def presign_put(self, key: str, *, content_type: str | None = None, expires: int | None = None) -> str: ...
    def presign_get(self, key: str, *, expires: int | None = None) -> str: ...
    async def create_multipart(self, key: str, *, content_type: str | None = None,
                               metadata: dict[str, str] | None = None) -> str: ...
    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int | None = None) -> str: ...
    async def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str: ...
    async def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> ObjectInfo: ...
    async def abort_multipart(self, key: str, upload_id: str) -> None: ...


def _etag(value: str | None) -> str:
    return (value or "").strip('"')


class S3Bucket:
    """A bucket on an S3-compatible endpoint (moto server, MinIO, R2, AWS)."""

    def __init__(self, client, name: str, *, presign_expires: int = 900, presign_client=None) -> None:
        self._s3 = client
        # presigned URLs are signed for the endpoint the caller will use
        self._presigner = presign_client or client
        self.name = name
        self.presign_expires = presign_expires

    async def put(self, key, body, *, content_type=None, metadata=None) -> ObjectInfo:
        extra = {}
        if content_type:
            extra["ContentType"] = content_type
        if metadata:
            extra["Metadata"] = metadata
        out = await aws.call(self._s3.put_object, Bucket=self.name, Key=key, Body=body, **extra)
        return ObjectInfo(key=key, size=len(body), etag=_etag(out.get("ETag")),
                          content_type=content_type, metadata=metadata)

    async def get(self, key) -> bytes | None:
        found = await self.read(key)
        return found[0] if found is not None else None

    async def read(self, key) -> tuple[bytes, ObjectInfo] | None:
        """The object's bytes and what S3 said of exactly those bytes (ETag, type), in one request."""
        def get_all():
            out = self._s3.get_object(Bucket=self.name, Key=key)
            return out, out["Body"].read()

        try:
            out, data = await aws.call(get_all)
        except ObjectStoreError as exc:
            if exc.missing:
                return None
            raise
        return data, ObjectInfo(key=key, size=len(data), etag=_etag(out.get("ETag")),
                                content_type=out.get("ContentType"), metadata=out.get("Metadata") or {},
                                last_modified=out.get("LastModified"))

    async def head(self, key) -> ObjectInfo | None:
        try:
            out = await aws.call(self._s3.head_object, Bucket=self.name, Key=key)
        except ObjectStoreError as exc:
            if exc.missing:
                return None
            raise
        return ObjectInfo(key=key, size=out["ContentLength"], etag=_etag(out.get("ETag")),
                          content_type=out.get("ContentType"), metadata=out.get("Metadata") or {},
                          last_modified=out.get("LastModified"))

    async def delete(self, *keys) -> None:
        for start in range(0, len(keys), 1000):
            chunk = [{"Key": k} for k in keys[start:start + 1000]]
            await aws.call(self._s3.delete_objects, Bucket=self.name, Delete={"Objects": chunk, "Quiet": True})

    async def list(self, prefix="") -> list[ObjectInfo]:
        found: list[ObjectInfo] = []
        token = None
        while True:
            kwargs = {"Bucket": self.name, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            out = await aws.call(self._s3.list_objects_v2, **kwargs)
            for item in out.get("Contents", []):
                found.append(ObjectInfo(key=item["Key"], size=item["Size"], etag=_etag(item.get("ETag")),
                                        last_modified=item.get("LastModified")))
            if not out.get("IsTruncated"):
                return found
            token = out["NextContinuationToken"]

    def presign_put(self, key, *, content_type=None, expires=None) -> str:
        params = {"Bucket": self.name, "Key": key}
        if content_type:
            params["ContentType"] = content_type
        return self._presigner.generate_presigned_url("put_object", Params=params,
                                               ExpiresIn=expires or self.presign_expires, HttpMethod="PUT")

    def presign_get(self, key, *, expires=None) -> str:
        return self._presigner.generate_presigned_url("get_object", Params={"Bucket": self.name, "Key": key},
                                               ExpiresIn=expires or self.presign_expires)

    async def create_multipart(self, key, *, content_type=None, metadata=None) -> str:
        extra = {}
        if content_type:
            extra["ContentType"] = content_type
        if metadata:
            extra["Metadata"] = metadata
        out = await aws.call(self._s3.create_multipart_upload, Bucket=self.name, Key=key, **extra)
        return out["UploadId"]

    def presign_part(self, key, upload_id, part_number, *, expires=None) -> str:
        return self._presigner.generate_presigned_url(
            "upload_part",
            Params={"Bucket": self.name, "Key": key, "UploadId": upload_id, "PartNumber": part_number},
            ExpiresIn=expires or self.presign_expires, HttpMethod="PUT")

    async def upload_part(self, key, upload_id, part_number, body) -> str:
        out = await aws.call(self._s3.upload_part, Bucket=self.name, Key=key, UploadId=upload_id,
                             PartNumber=part_number, Body=body)
        return _etag(out.get("ETag"))

    async def complete_multipart(self, key, upload_id, parts) -> ObjectInfo:
        await aws.call(self._s3.complete_multipart_upload, Bucket=self.name, Key=key, UploadId=upload_id,
                       MultipartUpload={"Parts": [{"PartNumber": n, "ETag": f'"{_etag(e)}"'} for n, e in parts]})
        info = await self.head(key)
        assert info is not None
        return info

    async def abort_multipart(self, key, upload_id) -> None:
        await aws.call(self._s3.abort_multipart_upload, Bucket=self.name, Key=key, UploadId=upload_id)

    def describe(self) -> dict:
        return {"type": "r2_bucket", "bucket_name": self.name, "endpoint": self._s3.meta.endpoint_url}
