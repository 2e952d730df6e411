"""A scope of many small entities past the exact bound, but a small share of the partitions it
spans, is searched exactly: every one of its chunks is a candidate (not only the first documents),
no HNSW walk, in both statements.

The database is this module's own (deterministic planner row counts): 30 entities of 100 chunks
(3,000 chunks in 600 documents, past both exact bounds) beside one entity of 8,000. Their share of
the partitions is ~27%, so the test raises EXACT_MAX_SHARE to 0.35 where it needs the selective path
(at the default 5% the same scope needs ~60k chunks around it, which scripts/scale_search.py
measures); everything else is the shipped rule."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from edgeindex.bindings.ai import LOCAL_MODEL_ID
from edgeindex.evaluation import explain, loader
from edgeindex.search import defaults, engine
from edgeindex.search.request import parse_request

from ..helpers import DATA, database_of_its_own

MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
SMALL, SMALL_CHUNKS, BIG_CHUNKS = 30, 100, 8000


@pytest.fixture(scope="module")
async def db(stack):
    async with database_of_its_own(stack, "selective", model_id=MODEL_ID, dimension=DIMENSION) as database:
        yield database


@pytest.fixture(scope="module")
async def many(db) -> list[str]:
    texts = loader.read_passages(DATA / "msmarco" / "corpus.jsonl")
    tag = uuid.uuid4().hex[:6]
    assert await loader.load_synthetic(db, f"big-{tag}", texts, BIG_CHUNKS, model_id=MODEL_ID,
                                       dimension=DIMENSION) == BIG_CHUNKS
    entities = [f"small-{tag}-{i:02d}" for i in range(SMALL)]
    for i, entity in enumerate(entities):
        assert await loader.load_synthetic(db, entity, texts, SMALL_CHUNKS, model_id=MODEL_ID, dimension=DIMENSION,
                                           seed=i + 1, offset=i * SMALL_CHUNKS, batch_documents=50) == SMALL_CHUNKS
    await explain.vacuum_analyze(db)
    assert SMALL * SMALL_CHUNKS > defaults.EXACT_MAX_CHUNKS
    documents = await db.fetchone("SELECT count(*) AS n FROM documents WHERE entity_id = ANY(%s)", (entities,))
    assert documents["n"] > defaults.EXACT_MAX_DOCUMENTS + 1   # more than the `docs` CTE holds
    return entities


def _embedding(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return v / np.linalg.norm(v)


def _request(**body):
    return parse_request({"query": "thermometer fahrenheit scale", "k": 10, **body}, max_k=100,
                         max_query_chars=2000)


async def _exact_top(db, entities: list[str], embedding: np.ndarray, n: int) -> list[str]:
    rows = await db.fetch("SELECT id::text AS id FROM chunks WHERE entity_id = ANY(%s) "
                          "ORDER BY embedding <=> %s LIMIT %s", (entities, embedding, n))
    return [r["id"] for r in rows]


async def test_the_verdict_follows_the_share_and_the_selective_bound(db, many, monkeypatch):
    tuned = engine.tuned_connections()

    async def exact() -> tuple[bool, bool]:
        one, _ = await engine.search(db, _request(), many, _embedding(1), model_id=LOCAL_MODEL_ID, tuned=tuned,
                                     limit=10)
        two = await engine.lexical(db, _request(), many, tuned=tuned, limit=10)
        assert (one.nonempty, one.exact) == (two.nonempty, two.exact)
        return one.exact

    assert await exact() is False                      # 27% of the partitions: HNSW at the default share
    monkeypatch.setattr(defaults, "EXACT_MAX_SHARE", 0.35)
    assert await exact() is True
    monkeypatch.setattr(defaults, "EXACT_SELECTIVE_MAX_CHUNKS", SMALL * SMALL_CHUNKS - 1)
    assert await exact() is False
    monkeypatch.setattr(defaults, "EXACT_SELECTIVE_MAX_CHUNKS", SMALL * SMALL_CHUNKS)
    assert await exact() is True
    assert (await engine.lexical(db, _request(), many[:3], tuned=tuned, limit=10)).exact  # under the plain bound


@pytest.mark.parametrize("statement", ["one", "two"])
async def test_a_selective_scope_gets_the_exact_top_without_walking_hnsw(db, many, monkeypatch, statement):
    monkeypatch.setattr(defaults, "EXACT_MAX_SHARE", 0.35)
    tuned = engine.tuned_connections()
    for seed in range(5):
        embedding = _embedding(seed)
        request = _request(alpha=1.0, strategy="vector")
        if statement == "one":
            summary, rows = await engine.search(db, request, many, embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                                limit=10)
        else:
            summary = await engine.lexical(db, request, many, tuned=tuned, limit=10)
            rows = await engine.retrieve(db, request, many, embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                         lexical_result=summary,
                                         limit=10)
        assert summary.exact
        assert [str(r["chunk_id"]) for r in rows] == await _exact_top(db, many, embedding, 10)
    how = explain.explain_one if statement == "one" else explain.explain
    used = explain.used_kinds(await how(db, _request(alpha=1.0), many, _embedding(9)), await explain.index_kinds(db))
    assert "hnsw" not in used, used


@pytest.mark.parametrize("text_mode", ["any", "websearch"])
async def test_a_scope_of_few_chunks_matches_their_text_without_the_gin_index(db, many, monkeypatch, text_mode):
    """One small entity (100 chunks): BM25's candidates come from matching its chunks' text, not from
    the partition's full-text GIN index, and are exactly what the GIN path finds."""
    entity = [many[0]]
    # Two of the chunk's lexemes that stem to themselves: a Snowball stem need not (a query of a
    # stem that re-stems elsewhere matches nothing, and "websearch" needs both words).
    row = await db.fetchone("SELECT (SELECT string_agg(lexeme, ' ') FROM (SELECT lexeme FROM unnest(tsv) "
                            "WHERE length(lexeme) > 4 AND lexeme ~ '^[a-z]+$' "
                            "AND tsvector_to_array(to_tsvector(text_config, lexeme)) = ARRAY[lexeme] "
                            "ORDER BY lexeme LIMIT 2) x) AS words "
                            "FROM chunks WHERE entity_id = %s ORDER BY id LIMIT 1", (many[0],))
    assert len(row["words"].split()) == 2, row
    request = _request(query=row["words"], alpha=0.0, text_mode=text_mode)
    tuned = engine.tuned_connections()
    kinds = await explain.index_kinds(db)

    async def answer() -> tuple[list, set[str]]:
        _, rows = await engine.search(db, request, entity, _embedding(2), model_id=LOCAL_MODEL_ID, tuned=tuned,
                                      limit=10)
        plan = await explain.explain_one(db, request, entity, _embedding(2))
        return [(str(r["chunk_id"]), round(r["score"], 9)) for r in rows], explain.used_kinds(plan, kinds)

    few, few_kinds = await answer()
    monkeypatch.setattr(defaults, "EXACT_MAX_CHUNKS", 10)     # the same entity, no longer "few"
    gin, gin_kinds = await answer()
    assert few and few == gin
    assert "fts_gin" not in few_kinds and "fts_gin" in gin_kinds, (few_kinds, gin_kinds)
