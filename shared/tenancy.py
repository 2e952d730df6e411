"""Tenancy: entities (user, group, network, community) and API keys granting sets of them.

Keys are random secrets shown once; only their sha256 is stored. An admin key
manages entities and keys and may act on every entity.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from . import sqlfiles
from .bindings.database import Database
from .errors import BindingError, Conflict, Forbidden, NotFound, RateLimited, Unauthorized, ValidationError
from .validation import EntityId

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


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/=")
MAX_KEY_CHARS = 512


def resolve_entities(principal: Principal, requested: list[str] | None) -> list[str]:
    """The entities to search: the requested ones (403 if any is outside the grant) or all granted."""
    if requested is None:
        if principal.is_admin:
            raise ValidationError("an admin key must name the entities to search", field="entity_ids")
        return sorted(principal.entity_ids)
    return sorted(principal.check(requested))


async def missing_entities(db: Database, entity_ids: list[str]) -> list[str]:
    rows = await db.fetch(SQL["existing_entities"], {"ids": entity_ids})
    found = {r["id"] for r in rows}
    return [e for e in entity_ids if e not in found]


async def resolve_existing_entities(db: Database, principal: Principal, requested: list[str] | None) -> list[str]:
    """``resolve_entities``, and 404 naming any entity that does not exist. A key's grant names only
    entities that exist; an admin key reaches every id, so its request is the one checked here, or
    a typo in an entity id would answer an empty 200."""
    entity_ids = resolve_entities(principal, requested)
    if principal.is_admin:
        missing = await missing_entities(db, entity_ids)
        if missing:
            raise NotFound(f"unknown entity {', '.join(map(repr, missing))}", field="entity_ids")
    return entity_ids


def bearer(headers) -> str:
    """The presented secret: ``Authorization: Bearer <key>`` or ``X-API-Key``; a 401 if it cannot be one."""
    value = headers.get("Authorization", "")
    field = "Authorization"
    if value.lower().startswith("bearer "):
        secret = value[7:].strip()
    else:
        secret, field = headers.get("X-API-Key", "").strip(), "X-API-Key"
    # Keys are printable ASCII: anything else (a non-Latin-1 header, NUL, 10 kB) is no key of ours.
    if len(secret) > MAX_KEY_CHARS or not set(secret) <= _KEY_CHARS:
        raise Unauthorized("malformed API key: send 'Authorization: Bearer <key>'", field=field)
    return secret


class TokenBuckets(Protocol):
    def take(self, bucket: str, rate: float, burst: float) -> float: ...


class LocalTokenBuckets:
    """Token buckets in this process's memory: with N processes a key gets N times the rate."""

    def __init__(self, *, clock=time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # bucket → (tokens, when)

    def take(self, bucket: str, rate: float, burst: float) -> float:
        now = self._clock()
        tokens, then = self._buckets.get(bucket, (burst, now))
        tokens = min(burst, tokens + (now - then) * rate)
        if tokens < 1:
            self._buckets[bucket] = (tokens, now)
            return (1 - tokens) / rate
        self._buckets[bucket] = (tokens - 1, now)
        return 0.0


class RateLimiter:
    """A token bucket per API key: ``rate`` requests a second, bursts up to ``burst``. The buckets are
    the shared KV's when it has them (Redis: the limit is the deployment's, whatever the process
    count), else this process's own."""

    def __init__(self, rate: float, burst: float | None = None, *, clock=time.monotonic,
                 buckets: TokenBuckets | None = None) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, 2 * rate)
        self.buckets = buckets if buckets is not None else LocalTokenBuckets(clock=clock)
        # while the shared buckets' KV does not answer, this process's own keep a limit
        self.fallback = LocalTokenBuckets(clock=clock)

    def take(self, key_id: str) -> None:
        if self.rate <= 0:
            return
        try:
            wait = self.buckets.take(key_id, self.rate, self.burst)
        except BindingError:
            wait = self.fallback.take(key_id, self.rate, self.burst)
        if wait > 0:
            raise RateLimited(f"too many requests for this API key (limit {self.rate:g}/s)", retry_after=wait)


class Tenancy:
    """Entities and API keys in the database, with a short in-process cache of key lookups and an
    optional per-key rate limit."""

    def __init__(self, db: Database, *, limiter: RateLimiter | None = None) -> None:
        self.db = db
        self.limiter = limiter
        self._auth_cache: dict[str, tuple[float, Principal]] = {}

    async def authenticate(self, headers) -> Principal:
        principal = await self._principal(headers)
        if self.limiter is not None:
            self.limiter.take(principal.key_id)
        return principal

    async def _principal(self, headers) -> Principal:
        secret = bearer(headers)
        if not secret:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'", field="Authorization")
        digest = hash_key(secret)
        cached = self._auth_cache.get(digest)
        now = time.monotonic()
        if cached and now - cached[0] < _AUTH_TTL:
            return cached[1]
        row = await self.db.fetchone(SQL["key_by_hash"], {"hash": digest})
        # The index finds the row; the comparison that decides is constant-time all the same.
        if row is None or not hmac.compare_digest(row["key_hash"], digest):
            self._auth_cache.pop(digest, None)
            raise Unauthorized("unknown or revoked API key", field="Authorization")
        principal = Principal(row["id"], row["is_admin"], frozenset(row["entity_ids"]))
        self._auth_cache[digest] = (now, principal)
        return principal

    async def require_admin(self, headers) -> Principal:
        principal = await self.authenticate(headers)
        if not principal.is_admin:
            raise Forbidden("this route needs an admin key", field="Authorization")
        return principal

    async def ensure_admin_key(self, secret: str) -> None:
        """Make sure the deployment's admin secret (EDGEINDEX_ADMIN_KEY) is a valid admin key."""
        await self.db.execute(SQL["ensure_admin"], {"id": "admin", "hash": hash_key(secret)})

    async def create_key(self, *, name: str, entity_ids: list[str], is_admin: bool = False) -> dict:
        missing = await self.missing_entities(entity_ids)
        if missing:
            raise NotFound(f"unknown entity {', '.join(map(repr, missing))}", field="entity_ids")
        secret = "ei_" + secrets.token_urlsafe(32)
        key_id = "key_" + secrets.token_hex(8)
        await self.db.execute(SQL["create_key"], {"id": key_id, "hash": hash_key(secret), "name": name,
                                                  "admin": is_admin, "entities": entity_ids})
        return {"id": key_id, "key": secret, "name": name, "entity_ids": entity_ids, "admin": is_admin}

    async def revoke_key(self, key_id: str) -> None:
        if not await self.db.execute(SQL["revoke_key"], {"id": key_id}):
            raise NotFound(f"no active key {key_id!r}", field="key_id")
        self._auth_cache.clear()

    async def list_keys(self) -> list[dict]:
        return await self.db.fetch(SQL["list_keys"])

    async def create_entity(self, *, id: str, kind: str, name: str = "") -> dict:
        if kind not in ENTITY_KINDS:
            raise ValidationError(f"kind must be one of {', '.join(ENTITY_KINDS)}", field="kind")
        row = await self.db.fetchone(SQL["create_entity"], {"id": id, "kind": kind, "name": name})
        if row is None:
            raise Conflict(f"entity {id!r} already exists", field="id")
        return row

    async def list_entities(self) -> list[dict]:
        return await self.db.fetch(SQL["list_entities"])

    async def missing_entities(self, entity_ids: list[str]) -> list[str]:
        return await missing_entities(self.db, entity_ids)


# --- request bodies of the tenancy admin routes ---------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class EntityRequest(_Strict):
    id: EntityId
    kind: Literal["user", "group", "network", "community"]
    name: Annotated[str, StringConstraints(max_length=200)] = ""


class KeyRequest(_Strict):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    entity_ids: Annotated[list[EntityId], Field(max_length=1000)] = []
    admin: bool = False  # strictly a JSON boolean: "yes", "true" or 1 is a 400, never an admin key
