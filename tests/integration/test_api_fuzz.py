"""Property-based fuzzing of every worker's routes, generated from the OpenAPI spec each one serves
(schemathesis over hypothesis): whatever the inputs, no 5xx, and every answer — success or error —
matches the schema the spec documents for it. Bounded (examples per operation, derandomized) so
CI stays within time; `EDGEINDEX_FUZZ_EXAMPLES` raises the bound for a deeper run."""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance

from ..helpers import new_tenant

EXAMPLES = int(os.environ.get("EDGEINDEX_FUZZ_EXAMPLES", "12"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


@schemathesis.serializer("application/x-ndjson", "application/ndjson", "application/jsonl")
def _ndjson(ctx, value) -> bytes:
    """The bulk route's body (one JSON document per line): the spec declares it a string, so the
    generated text goes out as it is — mostly bad lines, which must each get their 4xx, never a 5xx."""
    if isinstance(value, bytes):
        return value
    return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def fuzz_key(stack, upload_admin):
    return new_tenant(stack, upload_admin, prefix="fz").key


def _fuzz(base_url: str, key: str) -> dict[str, int]:
    """Every operation of the worker's spec, EXAMPLES generated cases each; the first failing case
    (shrunk by hypothesis) fails the test. Returns the calls made per operation."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    calls: dict[str, int] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        calls[operation.label] = 0

        @FUZZ
        @given(case=operation.as_strategy())
        def run(case):
            calls[operation.label] += 1  # noqa: B023 - run is called within this iteration
            case.call_and_validate(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, checks=CHECKS)

        run()
    return calls


@pytest.mark.parametrize("worker", ["search", "upload", "ingest", "mcp"])
def test_every_route_survives_generated_input_and_answers_as_documented(stack, fuzz_key, worker):
    calls = _fuzz(stack.url(worker), fuzz_key)
    assert calls and min(calls.values()) > 0, calls  # every operation was exercised
