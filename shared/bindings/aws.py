"""boto3 clients for S3-compatible and SQS-compatible endpoints, built once per env."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..errors import BindingError, ObjectStoreError

T = TypeVar("T")

# Transport hiccups are retried; service answers (NoSuchKey, AccessDenied...) are not.
TRANSIENT = (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError)


def client(service: str, *, endpoint: str, region: str, access_key_id: str, secret_access_key: str):
    if not endpoint:
        raise BindingError(
            f"no {service} endpoint configured: set services.{service}.endpoint "
            f"(or EDGEINDEX_{service.upper()}_ENDPOINT), or run `edgeindex dev` for the embedded one"
        )
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        config=BotoConfig(
            signature_version="s3v4" if service == "s3" else None,
            s3={"addressing_style": "path"} if service == "s3" else None,
            retries={"max_attempts": 1, "mode": "standard"},  # tenacity owns retries
            max_pool_connections=32,
            connect_timeout=5,
            read_timeout=30,
        ),
    )


# boto3 calls block: they run on threads of their own, as many as a client's connections. On the
# default executor (cpu count + 4 threads) a consumer's long polls (a second each, one per batch
# loop) would take every thread while the queue is idle, and everything else run in a thread
# (the cache's invalidation, extraction, chunking) would wait behind them.
_THREADS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="aws")


async def call(fn: Callable[..., T], /, *args, **kwargs) -> T:
    """Run a blocking boto3 call in a thread, retrying transport failures with backoff.

    botocore's errors stop here, wrapped once into the library's own: a service answer
    becomes ``ObjectStoreError`` (with the service's code), a transport failure ``BindingError``.
    """
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(TRANSIENT),
            stop=stop_after_attempt(4),
            wait=wait_exponential(multiplier=0.2, max=2),
            reraise=True,
        ):
            with attempt:
                return await asyncio.get_running_loop().run_in_executor(_THREADS, functools.partial(fn, *args,
                                                                                                    **kwargs))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise ObjectStoreError(f"{error.get('Code')}: {error.get('Message')}",
                               service_code=str(error.get("Code") or "")) from exc
    except BotoCoreError as exc:
        raise BindingError(f"object storage or queue unreachable: {exc}") from exc
    raise AssertionError("unreachable")
