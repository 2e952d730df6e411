"""One statement for both halves of a search (engine.search) returns exactly what the two
statements (engine.lexical, then engine.hybrid with its arrays) return, row for row and score
for score, with the same corrections and router evidence, on both vector paths: HNSW over a
tenant above the exact-search bounds, and exact distances under a selective filter.

The tenant lives in a database of its own (tests/helpers.py, database_of_its_own), analysed once:
on the shared one, other tests' writes into its partition's HNSW graph and autovacuum's timing can
change what the two statements read between them (the vector-only search's candidates, and so its
normalised scores, can then differ)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from edgeindex.bindings.ai import LOCAL_MODEL_ID
from edgeindex.evaluation import loader
from edgeindex.search import defaults, engine
from edgeindex.search.request import parse_request

from ..helpers import DATA, database_of_its_own

MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
CHUNKS = 2500

REQUESTS = [
    {"query": "what is the temperature of the sun"},
    {"query": "thermometer fahrenheit scale", "alpha": 0.0},
    {"query": "thermometer fahrenheit scale", "alpha": 1.0},
    {"query": "causes of high blood pressure", "fusion": "rrf"},
    {"query": "causes of high blood pressure", "dedupe": True, "k": 5},
    {"query": "fahrenhiet thermometr", "alpha": 0.5},                       # typos: stand-ins
    {"query": "\"blood pressure\" -heart", "text_mode": "websearch"},
    {"query": "how long to boil an egg", "filters": {"tags": ["t1", "t2"]}},   # HNSW, filtered in the scan
    {"query": "how long to boil an egg", "filters": {"document_ids": ["doc3", "doc4", "doc9"]}},  # exact
    {"query": "how long to boil an egg", "filters": {"exclude_document_ids": ["doc0", "doc1"]},
     "include": {"summary": True, "neighbours": 1}},
    {"query": "zzqxv wvqzz"},                                                # no word any chunk holds
    {"query": "blood pressure", "vector_threshold": 0.2, "text_threshold": 0.3, "k": 3},
]


@pytest.fixture(scope="module")
async def db(stack):
    """A database of this module's own (overrides the session's)."""
    async with database_of_its_own(stack, "one_statement", model_id=MODEL_ID, dimension=DIMENSION) as database:
        yield database


@pytest.fixture(scope="module")
async def tenant(db):
    entity = f"one-{uuid.uuid4().hex[:8]}"
    texts = loader.read_passages(DATA / "msmarco" / "corpus.jsonl")
    assert CHUNKS > defaults.EXACT_MAX_CHUNKS  # the unfiltered searches take the HNSW path
    assert await loader.load_synthetic(db, entity, texts, CHUNKS, model_id=MODEL_ID, dimension=DIMENSION) == CHUNKS
    for table in ("chunks", "documents", "term_stats", "entity_stats"):
        await db.execute(f"VACUUM ANALYZE {table}")
    return entity


def _embedding(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("body", REQUESTS, ids=[str(i) for i in range(len(REQUESTS))])
async def test_one_statement_returns_what_two_return(db, tenant, body):
    request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
    embedding = _embedding(len(body["query"]))
    tuned = engine.tuned_connections()
    lexical = await engine.lexical(db, request, [tenant], tuned=tuned, limit=request.k)
    two = await engine.retrieve(db, request, [tenant], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                lexical_result=lexical,
                                limit=request.k)
    summary, one = await engine.search(db, request, [tenant], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                       limit=request.k)
    assert one == two
    assert (summary.nonempty, summary.exact) == (lexical.nonempty, lexical.exact)
    assert summary.corrections == lexical.corrections and summary.evidence == lexical.evidence


async def test_the_comparison_sees_results_corrections_and_both_vector_paths(db, tenant):
    """The cases above are not vacuous: results come back, a typo is corrected, and the
    scope takes the HNSW path unfiltered and the exact path under a selective filter."""
    tuned = engine.tuned_connections()

    async def run(body):
        request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
        return await engine.search(db, request, [tenant], _embedding(1), model_id=LOCAL_MODEL_ID, tuned=tuned,
                                   limit=request.k)

    summary, rows = await run(REQUESTS[0])
    assert len(rows) == 10 and not summary.exact and summary.nonempty
    summary, rows = await run(REQUESTS[5])
    assert summary.corrections and rows
    summary, rows = await run(REQUESTS[8])
    assert summary.exact and {r["document_id"] for r in rows} <= {"doc3", "doc4", "doc9"}
    summary, rows = await run({"query": "anything", "filters": {"document_ids": ["nope"]}})
    assert rows == [] and not summary.nonempty  # no chunk: still one summary row


@pytest.mark.parametrize("body", REQUESTS, ids=[str(i) for i in range(len(REQUESTS))])
async def test_a_statement_without_its_idle_parts_returns_what_the_whole_statement_returns(db, tenant, body):
    """engine.statement leaves out what a request does not use (document filters, neighbours,
    expansion terms); the rows must be those of the whole statement, row for row."""
    request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
    params = engine.build_params(request, [tenant], _embedding(len(body["query"])), limit=request.k,
                                 model_id=LOCAL_MODEL_ID)
    tuned = engine.tuned_connections()
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        for name in ("lexical", "search"):
            trimmed, whole = engine.statement(name, params), engine.whole_statement(name, params)
            assert await engine.execute(conn, trimmed, params) == await engine.execute(conn, whole, params), name
        await conn.rollback()
    assert engine.statement("search", params) != engine.whole_statement("search", params) \
        or body.get("include", {}).get("neighbours")


@pytest.mark.parametrize("statements", ["one", "two"])
async def test_chunk_vectors_of_another_model_than_the_querys_score_nothing(db, tenant, statements):
    # a search worker that has not yet followed a model cutover embeds with the old model: the chunks'
    # vectors, now of the new one, must not be compared with its query vector
    request = parse_request({"query": "thermometer fahrenheit scale", "alpha": 0.5, "k": 10}, max_k=100,
                            max_query_chars=2000)
    embedding = _embedding(3)
    tuned = engine.tuned_connections()

    async def rows(model_id: str) -> list[dict]:
        if statements == "one":
            return (await engine.search(db, request, [tenant], embedding, model_id=model_id, tuned=tuned,
                                        limit=request.k))[1]
        return await engine.retrieve(db, request, [tenant], embedding, model_id=model_id, tuned=tuned,
                                     limit=request.k)

    own, other = await rows(MODEL_ID), await rows("intfloat/multilingual-e5-small")
    assert own and other
    assert max(r["vector"] for r in own) > 0
    assert [r["vector"] for r in other] == [0] * len(other)
    assert min(r["text"] for r in other) > 0   # what is left is what full text found
