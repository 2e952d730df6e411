"""Tenancy: entities (user, group, network, community) and API keys granting sets of them.

Keys are random secrets shown once; only their sha256 is stored. An admin key
manages entities and keys and may act on every entity.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass

from . import sqlfiles
from .bindings.database import Database
from .errors import Conflict, Forbidden, NotFound, Unauthorized, ValidationError

SQL = sqlfiles.load("tenancy.sql")
ENTITY_KINDS = ("user", "group", "network", "community")
_AUTH_TTL = 2.0  # seconds a key lookup is reused in-process; bounds how late a revocation bites


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    key_id: str
    is_admin: bool
    entity_ids: frozenset[str]

    def check(self, entity_ids: Iterable[str], *, field: str = "entity_ids") -> list[str]:
        """The requested entities, or 403 naming those outside this key's grant."""
        wanted = list(dict.fromkeys(entity_ids))
        if self.is_admin:
            return wanted
        outside = [e for e in wanted if e not in self.entity_ids]
        if outside:
            raise Forbidden(f"this API key is not granted entity {', '.join(map(repr, outside))}", field=field)
        return wanted


_auth_cache: dict[str, tuple[float, Principal]] = {}


def bearer(headers) -> str:
    value = headers.get("Authorization", "")
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return headers.get("X-API-Key", "").strip()


async def authenticate(db: Database, headers) -> Principal:
    secret = bearer(headers)
    if not secret:
        raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'", field="Authorization")
    digest = hash_key(secret)
    cached = _auth_cache.get(digest)
    now = time.monotonic()
    if cached and now - cached[0] < _AUTH_TTL:
        return cached[1]
    row = await db.fetchone(SQL["key_by_hash"], {"hash": digest})
    if row is None:
        _auth_cache.pop(digest, None)
        raise Unauthorized("unknown or revoked API key", field="Authorization")
    principal = Principal(row["id"], row["is_admin"], frozenset(row["entity_ids"]))
    _auth_cache[digest] = (now, principal)
    return principal


async def require_admin(db: Database, headers) -> Principal:
    principal = await authenticate(db, headers)
    if not principal.is_admin:
        raise Forbidden("this route needs an admin key")
    return principal


async def ensure_admin_key(db: Database, secret: str) -> None:
    """Make sure the deployment's admin secret (EDGEINDEX_ADMIN_KEY) is a valid admin key."""
    await db.execute(SQL["ensure_admin"], {"id": "admin", "hash": hash_key(secret)})


async def create_key(db: Database, *, name: str, entity_ids: list[str], is_admin: bool = False) -> dict:
    missing = await missing_entities(db, entity_ids)
    if missing:
        raise NotFound(f"unknown entity {', '.join(map(repr, missing))}", field="entity_ids")
    secret = "ei_" + secrets.token_urlsafe(32)
    key_id = "key_" + secrets.token_hex(8)
    await db.execute(SQL["create_key"], {"id": key_id, "hash": hash_key(secret), "name": name,
                                         "admin": is_admin, "entities": entity_ids})
    return {"id": key_id, "key": secret, "name": name, "entity_ids": entity_ids, "admin": is_admin}


async def revoke_key(db: Database, key_id: str) -> None:
    if not await db.execute(SQL["revoke_key"], {"id": key_id}):
        raise NotFound(f"no active key {key_id!r}", field="key_id")
    _auth_cache.clear()


async def list_keys(db: Database) -> list[dict]:
    return await db.fetch(SQL["list_keys"])


async def create_entity(db: Database, *, id: str, kind: str, name: str = "") -> dict:
    if kind not in ENTITY_KINDS:
        raise ValidationError(f"kind must be one of {', '.join(ENTITY_KINDS)}", field="kind")
    row = await db.fetchone(SQL["create_entity"], {"id": id, "kind": kind, "name": name})
    if row is None:
        raise Conflict(f"entity {id!r} already exists", field="id")
    return row


async def list_entities(db: Database) -> list[dict]:
    return await db.fetch(SQL["list_entities"])


async def missing_entities(db: Database, entity_ids: list[str]) -> list[str]:
    rows = await db.fetch(SQL["existing_entities"], {"ids": entity_ids})
    found = {r["id"] for r in rows}
    return [e for e in entity_ids if e not in found]
