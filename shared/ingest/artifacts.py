"""Where a workflow step's output lives: inline in its checkpoint, or in the bucket.

Small outputs (the usual case) stay in the checkpoint row. Anything above
``INLINE_LIMIT`` goes to ``artifacts/<entity>/<document>/v<version>-<generation>/<name>``
and only its key is checkpointed, so a 50 MB document never sits in a
checkpoint or in every step's memory at once. The run deletes its artifacts
when it finishes; deleting the document deletes whatever is left.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ..bindings.bucket import Bucket

INLINE_LIMIT = 64 * 1024  # bytes of payload kept in the checkpoint itself


class ArtifactStore:
    def __init__(self, bucket: Bucket, prefix: str, *, inline_limit: int = INLINE_LIMIT) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.inline_limit = inline_limit

    async def save_bytes(self, name: str, data: bytes) -> dict:
        if len(data) <= self.inline_limit:
            return {"b64": base64.b64encode(data).decode("ascii")}
        key = self.prefix + name
        await self.bucket.put(key, data, content_type="application/octet-stream")
        return {"key": key, "size": len(data)}

    async def save_text(self, name: str, text: str) -> dict:
        data = text.encode("utf-8")
        if len(data) <= self.inline_limit:
            return {"text": text}
        key = self.prefix + name
        await self.bucket.put(key, data, content_type="text/plain; charset=utf-8")
        return {"key": key, "size": len(data)}

    async def save_json(self, name: str, value: Any) -> dict:
        return await self.save_text(name, json.dumps(value, separators=(",", ":")))

    async def load_bytes(self, ref: dict) -> bytes:
        if "b64" in ref:
            return base64.b64decode(ref["b64"])
        if "text" in ref:
            return ref["text"].encode("utf-8")
        data = await self.bucket.get(ref["key"])
        if data is None:
            # Transient from the step's point of view: retrying will not bring it back, but the
            # run's error then says exactly what went missing.
            raise FileNotFoundError(f"step artifact {ref['key']} is missing from the bucket")
        return data

    async def load_text(self, ref: dict | None) -> str:
        if ref is None:  # only an unchanged version's extract has no text, and no later step reads it then
            raise FileNotFoundError("a step's input text was never saved")
        if "text" in ref:
            return ref["text"]
        return (await self.load_bytes(ref)).decode("utf-8")

    async def load_json(self, ref: dict) -> Any:
        return json.loads(await self.load_text(ref))

    async def delete_all(self) -> int:
        keys = [o.key for o in await self.bucket.list(self.prefix)]
        if keys:
            await self.bucket.delete(*keys)
        return len(keys)
