"""Full text in any language: each chunk indexed with its language's text-search
configuration (infra/migrations/0006_languages.sql, shared/language.py), queries parsed
with the configurations present in the scope, term statistics kept per configuration.

Documents go in through the upload API and the ingest worker; what the chunks store is
read back from Postgres.
"""

from __future__ import annotations

from ..helpers import new_tenant, put_document, wait_document

GERMAN = ("Die Stadtverwaltung ließ im vergangenen Jahr dreihundert neue Häuser für junge Familien bauen. "
          "Die Mieten in den großen Städten steigen seit Jahren, und viele Familien ziehen deshalb aufs Land. "
          "Die Bundesregierung fördert den Wohnungsbau mit zinsgünstigen Krediten.")
ENGLISH = ("The city council approved a new budget for public transport. Buses will run more often on "
           "weekends, and the tram line to the airport opens next spring.")
CHINESE_DEFENCE = ("黑豹队的防守只丢了308分，在联赛中排名第六，同时也以24次拦截领先国家橄榄球联盟，并且四次入选职业碗。"
                   "职业碗防守截锋卡万·肖特以11分领先于全队，同时还有三次迫使掉球和两次重新接球。")
CHINESE_RIVER = ("亚马逊雨林是位于南美洲亚马逊盆地的热带雨林，面积约七百万平方公里，其中大部分位于巴西境内。"
                 "这片雨林拥有世界上最多样的动植物物种，被称为地球之肺。")

RECOUNT = """
SELECT c.text_config::text AS config, t.term, count(*) AS df
FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS t (term)
WHERE c.entity_id = %(e)s GROUP BY c.text_config, t.term
"""


async def stats_match_chunks(db, entity: str) -> None:
    """term_stats and entity_stats equal a recount from the chunks, per configuration."""
    stored = {(r["config"], r["term"]): r["df"] for r in await db.fetch(
        "SELECT config::text AS config, term, df FROM term_stats WHERE entity_id = %(e)s", {"e": entity})}
    recount = {(r["config"], r["term"]): r["df"] for r in await db.fetch(RECOUNT, {"e": entity})}
    assert stored == recount
    totals = {r["config"]: (r["chunks"], r["lexemes"]) for r in await db.fetch(
        "SELECT config::text AS config, chunks, lexemes FROM entity_stats WHERE entity_id = %(e)s AND chunks > 0",
        {"e": entity})}
    actual = {r["config"]: (r["chunks"], r["lexemes"]) for r in await db.fetch(
        "SELECT text_config::text AS config, count(*) AS chunks, sum(length(tsv)) AS lexemes "
        "FROM chunks WHERE entity_id = %(e)s GROUP BY text_config", {"e": entity})}
    assert totals == actual


async def chunk_rows(db, entity: str, document: str) -> list[dict]:
    return await db.fetch(
        "SELECT language, text_config::text AS config, segmented, tsv::text AS tsv FROM chunks "
        "WHERE entity_id = %(e)s AND document_id = %(d)s ORDER BY position", {"e": entity, "d": document})


def search(tenant, body: dict) -> dict:
    status, answer = tenant.search.post("/search", {"cache": False, "entity_ids": [tenant.entity_id], **body})
    assert status == 200, answer
    return answer


async def test_german_document_is_stemmed_in_german_and_found_by_another_inflection(db, stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="lg")
    put_document(t, "wohnen", GERMAN)
    put_document(t, "transit", ENGLISH)
    for d in ("wohnen", "transit"):
        assert (await wait_document(t, d))["status"] == "ready"

    (german,) = await chunk_rows(db, t.entity_id, "wohnen")
    assert (german["language"], german["config"], german["segmented"]) == ("de", "german", None)
    assert "'haus'" in german["tsv"]  # "Häuser" by the German stemmer (English leaves it "häuser")
    (english,) = await chunk_rows(db, t.entity_id, "transit")
    assert (english["language"], english["config"]) == ("en", "english")

    # singular, and a plural in another case: neither string occurs in the document
    for query in ("Haus", "Städte"):
        answer = search(t, {"query": query, "alpha": 0, "k": 5})
        assert [r["document_id"] for r in answer["results"]] == ["wohnen"], (query, answer)
        assert answer["results"][0]["scores"]["text"] > 0

    # an English query over the same mixed scope still finds the English document
    answer = search(t, {"query": "trams to airports", "alpha": 0, "k": 5})
    assert [r["document_id"] for r in answer["results"]] == ["transit"], answer


async def test_typo_is_corrected_against_the_vocabulary_of_its_configuration(stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="lt")
    put_document(t, "wohnen", GERMAN)
    put_document(t, "transit", ENGLISH)
    for d in ("wohnen", "transit"):
        assert (await wait_document(t, d))["status"] == "ready"
    answer = search(t, {"query": "Bundesregirung", "alpha": 0, "k": 5})
    # the German stem of "Bundesregierung" stands in for the German parse of the misspelling
    assert "bundesregier" in {term for terms in answer["corrections"].values() for term in terms}, answer
    assert [r["document_id"] for r in answer["results"]] == ["wohnen"], answer
    assert answer["results"][0]["scores"]["trigram"] > 0


async def test_chinese_document_is_found_by_a_chinese_query_in_text_mode(db, stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="lz")
    put_document(t, "defence", CHINESE_DEFENCE)
    put_document(t, "river", CHINESE_RIVER)
    put_document(t, "transit", ENGLISH)
    for d in ("defence", "river", "transit"):
        assert (await wait_document(t, d))["status"] == "ready"

    (row,) = await chunk_rows(db, t.entity_id, "defence")
    assert (row["language"], row["config"]) == ("zh", "simple")
    assert row["segmented"] is not None and "防守" in row["segmented"].split()
    assert "'防守'" in row["tsv"]  # a word, not a whole clause

    answer = search(t, {"query": "黑豹队的防守丢了多少分？", "alpha": 0, "k": 5})
    ranked = [r["document_id"] for r in answer["results"]]
    assert ranked[0] == "defence", answer
    assert "transit" not in ranked
    answer = search(t, {"query": "亚马逊雨林有多大", "alpha": 0, "k": 5})
    assert [r["document_id"] for r in answer["results"]][0] == "river", answer


async def test_term_statistics_equal_a_recount_after_upload_and_delete_of_non_english(db, stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="ls")
    put_document(t, "wohnen", GERMAN)
    put_document(t, "defence", CHINESE_DEFENCE)
    put_document(t, "transit", ENGLISH)
    for d in ("wohnen", "defence", "transit"):
        assert (await wait_document(t, d))["status"] == "ready"
    await stats_match_chunks(db, t.entity_id)
    configs = {r["config"] for r in await db.fetch(
        "SELECT DISTINCT config::text AS config FROM term_stats WHERE entity_id = %(e)s", {"e": t.entity_id})}
    assert configs == {"english", "german", "simple"}
    haus = await db.fetchone("SELECT df FROM term_stats WHERE entity_id = %(e)s AND config = 'german'::regconfig "
                             "AND term = 'haus'", {"e": t.entity_id})
    assert haus["df"] == 1

    for document in ("wohnen", "defence"):
        status, _ = t.upload.delete(f"/entities/{t.entity_id}/documents/{document}")
        assert status in (200, 202, 204)
        await stats_match_chunks(db, t.entity_id)
    left = await db.fetch("SELECT config::text AS config FROM term_stats WHERE entity_id = %(e)s "
                          "AND config <> 'english'::regconfig", {"e": t.entity_id})
    assert left == []  # no German or Chinese chunk left: their vocabularies are gone
    # and a German query finds nothing in what is left (no German configuration in scope any more)
    assert search(t, {"query": "Häuser", "alpha": 0, "k": 5})["results"] == []
