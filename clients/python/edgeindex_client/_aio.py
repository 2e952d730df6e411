"""The AsyncClient's own transport to the edgeindex services: aiohttp, answers as ``httpx.Response``.

httpx's async stack (httpx, httpcore, anyio, h11) takes ~0.9 ms per small request (p50, in process)
against ~0.3 ms for aiohttp on a keep-alive connection;
for a select that the server answers in ~9 ms that is the SDK's whole overhead, and more at the
tail on a busy machine. So calls to the services go through aiohttp. What the rest of the client
sees does not change: answers are ``httpx.Response`` objects and failures the httpx exceptions the
retry policy and ``transport_error`` already classify (a connection that never opened is retried,
a timeout is ``APITimeoutError``). Presigned object-storage URLs and a caller's own ``http_client``
stay on httpx (see ``AsyncClient``). aiohttp is optional (``pip install edgeindex-client[fast]``):
without it every call goes through httpx; it is imported on the first request, so
importing the client pulls no aiohttp.

Kept as httpx does it: redirects are not followed, no cookies are kept, a body of bytes goes
without a Content-Type the caller did not set, the environment's proxy settings are honoured, and
the timeout is per connect / per read (``httpx.Timeout``), not for the whole request.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json as jsonlib
import urllib.request
from typing import Any

import httpx

_SKIP_CONTENT_TYPE = frozenset({"Content-Type"})


def available() -> bool:
    """Whether aiohttp is installed (looked up, not imported)."""
    return importlib.util.find_spec("aiohttp") is not None


def _timeout(timeout: httpx.Timeout) -> Any:
    import aiohttp

    # httpx's pool timeout is the wait for a free connection, which aiohttp counts inside ``connect``
    connect = None if timeout.connect is None else timeout.connect + (timeout.pool or 0.0)
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=timeout.connect,
                                 sock_read=timeout.read)


class AiohttpTransport:
    """One aiohttp session (keep-alive pool), opened in the running loop on the first request."""

    def __init__(self, timeout: httpx.Timeout, *, max_connections: int = 64) -> None:
        self._timeout_settings = timeout
        self._max_connections = max_connections
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> Any:
        import aiohttp

        # idle connections dropped after 5 s, as httpx does (a gateway may close them soon after)
        connector = aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=5)
        # no cookie jar: the services set none, and httpx's jar was never read either. The proxy
        # environment is read once, as httpx does: aiohttp's trust_env reads it (and ~/.netrc) on every
        # request, 0.4 ms each, so it is on only when a proxy is configured.
        return aiohttp.ClientSession(connector=connector, timeout=_timeout(self._timeout_settings),
                                     trust_env=bool(urllib.request.getproxies()),
                                     cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=True)

    async def request(self, method: str, url: str, *, headers: dict[str, str] | None = None,
                      params: dict[str, str] | None = None, json: Any = None,
                      content: bytes | None = None) -> httpx.Response:
        import aiohttp

        session = self._session
        loop = asyncio.get_running_loop()
        # a session belongs to the loop it was opened in: a client used again under a new loop
        # (one asyncio.run after another) opens a new one, as httpx would reconnect
        if session is None or session.closed or self._loop is not loop:
            session, self._loop = self._open(), loop
            self._session = session
        headers = dict(headers or {})
        skip: frozenset[str] = frozenset()
        if json is not None:
            # the same bytes httpx would send for ``json=``
            content = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            if not any(name.lower() == "content-type" for name in headers):
                headers["Content-Type"] = "application/json"
        elif content is not None and not any(name.lower() == "content-type" for name in headers):
            skip = _SKIP_CONTENT_TYPE
        try:
            async with session.request(method, url, headers=headers, params=params, data=content,
                                       allow_redirects=False, skip_auto_headers=skip) as response:
                body = await response.read()
                status = response.status
                raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers]
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "connect timed out") from exc
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise httpx.ReadTimeout(str(exc) or "read timed out") from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except aiohttp.ServerDisconnectedError as exc:
            raise httpx.RemoteProtocolError(str(exc) or "server disconnected") from exc
        except aiohttp.ClientError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        # decompressed already: the encoding header would make httpx decode the body a second time
        raw = [(k, v) for k, v in raw if k.lower() != "content-encoding"]
        return httpx.Response(status, headers=raw, content=body)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = self._loop = None
