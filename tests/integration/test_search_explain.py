"""The search statements' plans, on a tenant big enough for the planner to want the indexes.

A smaller, honest version of scripts/explain_search.py (50k chunks): 9,000 chunks of real
passage text with random unit vectors (a few thousand would take the exact-search branch,
or have the planner rightly prefer sorting them all to walking the HNSW graph),
settled as autovacuum would leave them (VACUUM ANALYZE: statistics, GIN pending lists
merged), no planner switches.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from edgeindex.bindings.ai import LOCAL_MODEL_ID
from edgeindex.evaluation import explain, loader
from edgeindex.search import defaults, engine
from edgeindex.search.request import parse_request

from ..helpers import DATA

MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384


@pytest.fixture(scope="module")
async def big_tenant(db):
    entity = f"plan-{uuid.uuid4().hex[:8]}"
    texts = loader.read_passages(DATA / "msmarco" / "corpus.jsonl")
    chunks = 9000
    assert chunks > defaults.EXACT_MAX_CHUNKS
    assert await loader.load_synthetic(db, entity, texts, chunks, model_id=MODEL_ID, dimension=DIMENSION) == chunks
    await explain.vacuum_analyze(db)
    return entity


def _embedding() -> np.ndarray:
    v = np.random.default_rng(3).standard_normal(DIMENSION).astype(np.float32)
    return v / np.linalg.norm(v)


async def _kinds_used(db, entity: str, body: dict, *, one_statement: bool = False) -> set[str]:
    request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
    how = explain.explain_one if one_statement else explain.explain
    plan = await how(db, request, [entity], _embedding())
    return explain.used_kinds(plan, await explain.index_kinds(db))


async def test_large_scope_uses_hnsw_and_full_text_gin(db, big_tenant):
    used = await _kinds_used(db, big_tenant, {"query": "thermometer fahrenheit scale"})
    assert {"hnsw", "fts_gin"} <= used, used


async def test_selective_filter_takes_the_exact_path(db, big_tenant):
    used = await _kinds_used(db, big_tenant, {"query": "thermometer fahrenheit scale",
                                              "filters": {"document_ids": ["doc3", "doc4"]}})
    assert "hnsw" not in used, used


async def test_typo_falls_back_to_trigram_gin(db, big_tenant):
    used = await _kinds_used(db, big_tenant, {"query": "fahrenhiet", "alpha": 0})
    assert "trigram_gin" in used, used


async def test_explain_shortens_vectors(db, big_tenant):
    request = parse_request({"query": "x"}, max_k=100, max_query_chars=2000)
    plan = await explain.explain(db, request, [big_tenant], _embedding(), analyze=False)
    assert plan and all(len(line) < 2000 for line in plan)


async def test_one_statement_takes_the_same_index_paths(db, big_tenant):
    """Both halves in one statement (a fixed blend with the cache on): HNSW and GIN for the large
    scope, no HNSW under a selective filter, as with the two statements."""
    used = await _kinds_used(db, big_tenant, {"query": "thermometer fahrenheit scale"}, one_statement=True)
    assert {"hnsw", "fts_gin"} <= used, used
    used = await _kinds_used(db, big_tenant, {"query": "thermometer fahrenheit scale",
                                              "filters": {"document_ids": ["doc3", "doc4"]}}, one_statement=True)
    assert "hnsw" not in used and "fts_gin" in used, used


def _document_scans(plan: list[str]) -> list[str]:
    """The scans of the documents table under the plan's ``CTE docs`` (the scope's documents; not the
    join that gives results their titles)."""
    start = next(i for i, line in enumerate(plan) if line.strip() == "CTE docs")
    depth = len(plan[start]) - len(plan[start].lstrip())
    subtree = []
    for line in plan[start + 1:]:
        if len(line) - len(line.lstrip()) <= depth:
            break
        subtree.append(line)
    return [line for line in subtree if " on documents" in line]


async def test_an_unfiltered_big_tenant_settles_its_scope_without_reading_documents(db, big_tenant):
    """Past the exact bound by entity_stats' count, no document row is read to decide the vector path
    (reading them would be 501 rows a search); with a document filter the documents are counted."""
    request = parse_request({"query": "thermometer fahrenheit scale", "k": 10}, max_k=100, max_query_chars=2000)
    plan = await explain.explain_one(db, request, [big_tenant], _embedding())
    scans = _document_scans(plan)
    assert scans and all("never executed" in line for line in scans), scans
    filtered = parse_request({"query": "thermometer fahrenheit scale", "k": 10, "filters": {"tags": ["t3"]}},
                             max_k=100, max_query_chars=2000)
    scans = _document_scans(await explain.explain_one(db, filtered, [big_tenant], _embedding()))
    assert any("never executed" not in line for line in scans), scans


@pytest.mark.parametrize("statement", ["one", "lexical"])
async def test_the_scope_verdict_for_small_big_filtered_and_empty_scopes(db, big_tenant, statement):
    """Whether the scope holds anything and is small enough for exact vector search, as counted from the
    documents: entity_stats' count only ever settles a big unfiltered scope (in both statements)."""
    small = f"small-{uuid.uuid4().hex[:8]}"
    texts = loader.read_passages(DATA / "msmarco" / "corpus.jsonl", limit=200)
    assert await loader.load_synthetic(db, small, texts, 120, model_id=MODEL_ID, dimension=DIMENSION) == 120
    tuned = engine.tuned_connections()

    async def verdict(entities: list[str], filters: dict | None = None) -> tuple[bool, bool]:
        request = parse_request({"query": "thermometer fahrenheit scale", "k": 10, "filters": filters or {}},
                                max_k=100, max_query_chars=2000)
        if statement == "one":
            summary, _ = await engine.search(db, request, entities, _embedding(), model_id=LOCAL_MODEL_ID, tuned=tuned,
                                             limit=10)
        else:
            summary = await engine.lexical(db, request, entities, tuned=tuned, limit=10)
        return summary.nonempty, summary.exact

    assert await verdict([small]) == (True, True)
    assert await verdict([big_tenant]) == (True, False)
    assert await verdict([big_tenant], {"document_ids": ["doc3", "doc4"]}) == (True, True)
    assert await verdict([big_tenant], {"document_ids": ["nope"]}) == (False, True)
    assert await verdict([f"empty-{uuid.uuid4().hex[:8]}"]) == (False, True)
