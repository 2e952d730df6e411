"""Lexical retrieval: term statistics kept by the database, BM25 scoring, typo stand-ins.

Documents go in through the upload API and the ingest worker; statistics are checked
against a recount from the chunks themselves, and BM25 scores returned by the search
route against the formula computed here, in Python, from the stored tsvectors.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from edgeindex.search import defaults

from ..helpers import new_tenant, put_document, wait_document

RECOUNT = """
SELECT t.term, count(*) AS df
FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS t (term)
WHERE c.entity_id = %(e)s GROUP BY t.term
"""


async def stats_match_chunks(db, entity: str) -> None:
    stored = {r["term"]: r["df"] for r in await db.fetch(
        "SELECT term, df FROM term_stats WHERE entity_id = %(e)s", {"e": entity})}
    recount = {r["term"]: r["df"] for r in await db.fetch(RECOUNT, {"e": entity})}
    assert stored == recount
    totals = await db.fetchone("SELECT chunks, lexemes FROM entity_stats WHERE entity_id = %(e)s", {"e": entity})
    actual = await db.fetchone("SELECT count(*) AS chunks, coalesce(sum(length(tsv)), 0) AS lexemes "
                               "FROM chunks WHERE entity_id = %(e)s", {"e": entity})
    assert (totals["chunks"], totals["lexemes"]) == (actual["chunks"], actual["lexemes"])


def search(tenant, body: dict) -> dict:
    status, answer = tenant.search.post("/search", {"cache": False, **body})
    assert status == 200, answer
    return answer


async def test_term_statistics_follow_ingest_replace_and_delete(db, stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="lx")
    first = "Alpha particles ionize air.\n\nBeta decay emits electrons.\n\nGamma rays penetrate lead shielding."
    put_document(t, "physics", first)
    put_document(t, "other", "Lead pipes were common in old houses; plumbers replaced them with copper.")
    for d in ("physics", "other"):
        assert (await wait_document(t, d))["status"] == "ready"
    await stats_match_chunks(db, t.entity_id)
    lead = await db.fetchone("SELECT df FROM term_stats WHERE entity_id = %(e)s AND term = 'lead'", {"e": t.entity_id})
    assert lead["df"] == 2  # one chunk of each document

    # a new version: "lead" leaves the physics document, "tungsten" arrives
    put_document(t, "physics", first.replace("penetrate lead shielding", "penetrate tungsten shielding"))
    assert (await wait_document(t, "physics", version=2))["status"] == "ready"
    await stats_match_chunks(db, t.entity_id)

    status, _ = t.upload.delete(f"/entities/{t.entity_id}/documents/other")
    assert status == 200
    await stats_match_chunks(db, t.entity_id)
    gone = await db.fetchone("SELECT count(*) AS n FROM term_stats WHERE entity_id = %(e)s AND term = 'lead'",
                             {"e": t.entity_id})
    assert gone["n"] == 0  # no chunk holds it any more: out of the vocabulary, no typo can map to it


async def test_concurrent_ingestion_of_one_entity_keeps_exact_counts(db, stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="lc")
    words = ["network", "latency", "budget", "replica", "queue", "shard", "index", "cache"]
    for i in range(12):  # shared words in different orders: the writers' term sets overlap heavily
        text = " ".join(words[(i + j) % len(words)] for j in range(len(words))) + f" document{i} unique{i}."
        put_document(t, f"d{i}", text)
    docs = await asyncio.gather(*(wait_document(t, f"d{i}") for i in range(12)))
    assert [d["status"] for d in docs] == ["ready"] * 12, docs
    await stats_match_chunks(db, t.entity_id)
    network = await db.fetchone("SELECT df FROM term_stats WHERE entity_id = %(e)s AND term = 'network'",
                                {"e": t.entity_id})
    assert network["df"] == 12


def _bm25(query_terms: list[str], chunk_terms: dict[str, int], length: int, df: dict[str, int], n: int,
          avg_length: float) -> float:
    k1, b = defaults.BM25_K1, defaults.BM25_B
    score = 0.0
    for term in query_terms:
        tf = chunk_terms.get(term, 0)
        if tf:
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))
    return score


@pytest.fixture(scope="module")
async def theraderm(stack, upload_admin):
    """Common words against a rare one: what ts_rank (every word alike) got wrong."""
    t = new_tenant(stack, upload_admin, prefix="lb")
    docs = {
        "rare": "Theraderm is a moisturizing lotion for dry skin.",
        "both": "Theraderm lotion is used for eczema and is used after bathing.",
        "common1": "Farmers used old tools, used carts and used horses; what is used gets worn.",
        "common2": "The used car market grew; buyers used loans.",
        "common3": "Engineers used steel beams in the bridge.",
        "common4": "Sailors used the stars to navigate.",
        "common5": "Bakers used rye flour for dark bread.",
        "common6": "Painters used linseed oil as a binder.",
        "filler1": "Copper conducts electricity well and resists corrosion.",
        "filler2": "Glaciers carve valleys over thousands of years.",
    }
    for d, text in docs.items():
        put_document(t, d, text)
    for d in docs:
        assert (await wait_document(t, d))["status"] == "ready"
    return t


async def test_bm25_scores_match_the_formula(db, theraderm):
    t = theraderm
    answer = search(t, {"query": "what is theraderm used for", "alpha": 0, "k": 10})
    ranked = [r["document_id"] for r in answer["results"]]
    assert ranked[:2] == ["both", "rare"], ranked  # the rare word outweighs any number of "used"
    assert set(ranked) == {"both", "rare"} | {f"common{i}" for i in range(1, 7)}  # fillers share no word

    rows = await db.fetch("SELECT c.id::text AS id, length(c.tsv) AS length, u.lexeme, "
                          "cardinality(u.positions) AS tf FROM chunks c, unnest(c.tsv) u WHERE c.entity_id = %(e)s",
                          {"e": t.entity_id})
    chunks: dict[str, dict] = {}
    for r in rows:
        chunks.setdefault(r["id"], {"length": r["length"], "terms": {}})["terms"][r["lexeme"]] = r["tf"]
    n = len(chunks)
    avg_length = sum(c["length"] for c in chunks.values()) / n
    query_terms = ["theraderm", "use"]  # to_tsvector('english', ...) of the query: stop words gone, stemmed
    df = {term: sum(term in c["terms"] for c in chunks.values()) for term in query_terms}
    best = sum(math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5)) for q in query_terms) * (defaults.BM25_K1 + 1)
    for result in answer["results"]:
        c = chunks[result["chunk_id"]]
        expected = _bm25(query_terms, c["terms"], c["length"], df, n, avg_length) / best
        assert result["scores"]["text"] == pytest.approx(expected, abs=2e-6), result["document_id"]
        assert result["scores"]["trigram"] == 0


async def test_misspelled_word_is_replaced_by_its_closest_terms(theraderm):
    answer = search(theraderm, {"query": "therraderm lotion", "alpha": 0, "k": 3})
    assert answer["corrections"] == {"therraderm": ["theraderm"]}
    top = answer["results"][0]
    assert top["document_id"] in {"rare", "both"}
    assert top["scores"]["trigram"] > 0 and top["scores"]["text"] > 0  # "lotion" matched as typed

    # a stricter similarity than this pair has: no stand-in, only "lotion" counts
    strict = search(theraderm, {"query": "therraderm lotion", "alpha": 0, "trigram_threshold": 0.95})
    assert strict["corrections"] == {}
    assert strict["results"] and [r["scores"]["trigram"] for r in strict["results"]] == [0] * len(strict["results"])


async def test_query_text_cannot_inject_tsquery_syntax(theraderm):
    for query in ["theraderm' | 'used", "c'est la vie & !(a | b) <-> x:*", "theraderm\\ \\' :* & |"]:
        answer = search(theraderm, {"query": query, "alpha": 0})
        assert answer["results"] or "theraderm" not in query, query  # its words still match as words
        assert all(r["scores"]["text"] > 0 or r["scores"]["trigram"] > 0 for r in answer["results"])
    # quotes stay part of no lexeme: the first query is just the two words
    found = {r["document_id"] for r in search(theraderm, {"query": "theraderm' | 'used", "alpha": 0})["results"]}
    assert found == {"both", "rare"} | {f"common{i}" for i in range(1, 7)}


async def test_lexeme_query_matches_exactly_one_lexeme(db):
    rows = await db.fetch(
        "SELECT t.term, to_tsvector('simple', 'x') || array_to_tsvector(ARRAY[t.term]) @@ lexeme_query(t.term) AS hit, "
        "array_to_tsvector(ARRAY['other']) @@ lexeme_query(t.term) AS miss "
        "FROM unnest(ARRAY['plain', 'can''t', 'back\\slash', 'a & b', '!x', 'x:*', '''']) AS t (term)")
    assert len(rows) == 7 and all(r["hit"] and not r["miss"] for r in rows), rows
