"""Changing the serving embedding model on a running stack (``edgeindex models cutover`` / ``rollback``).

The stack starts on all-MiniLM-L6-v2 with Arabic documents, which it finds by meaning for one question
of five (tests/e2e/test_multilingual_stack.py). The cutover to multilingual-e5-small runs from the CLI
while an agent keeps searching: every search answers, the running search and ingest workers load the
new model and switch without a restart, the questions are then all found, an answer cached before is
not served after, and a document written after is embedded with the new model. The rollback serves the
old vectors again, the ones kept, plus the old model's vectors of what was written in between.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import psycopg
import pytest
from edgeindex.bindings.ai import LOCAL_MODEL_ID
from edgeindex.bindings.database import Database
from edgeindex.holds import Hold
from edgeindex.testing.worker import WorkerHooks
from psycopg.rows import dict_row

from ..helpers import Client, new_tenant, put_document, running_stack, wait_document, wait_for
from .test_multilingual_stack import DOCUMENTS, QUESTIONS

E5_ID = "intfloat/multilingual-e5-small"
HELD = "يتدفق نهر الفرات عبر تركيا وسوريا والعراق قبل أن يلتقي بنهر دجلة."
CACHED_QUESTION = next(iter(QUESTIONS))
# a fixed blend: the same request before and after, whatever the router would choose for either model
CACHED = {"cache": True, "strategy": "hybrid", "alpha": 0.5}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("cutover"), WorkerHooks(holds=True),
                       workers=["upload", "ingest", "search"], EDGEINDEX_MODEL_POLL_SECONDS="0.2",
                       EDGEINDEX_VAR_MODEL_SHADOW="multilingual-e5-small", EDGEINDEX_VAR_MODEL_SHADOW_SAMPLE="1"
                       ) as started:
        yield started


def _tenant_with_documents(stack, prefix: str):
    """A new tenant holding the Arabic documents, every one ready."""
    tenant = new_tenant(stack, Client(stack.url("upload"), stack.admin_key), prefix=prefix)
    for document_id, text in DOCUMENTS.items():
        put_document(tenant, document_id, text)
    for document_id in DOCUMENTS:
        assert asyncio.run(wait_document(tenant, document_id, timeout=300))["status"] == "ready"
    return tenant


@pytest.fixture(scope="module")
def tenant(stack):
    return _tenant_with_documents(stack, "cut")


def _search(tenant, query: str, *, cache: bool = False, **options) -> dict:
    status, answer = tenant.search.post("/search", {"query": query, "entity_ids": [tenant.entity_id], "k": 1,
                                                    "cache": cache, **options})
    assert status == 200, answer
    return answer


def _found(tenant) -> dict[str, str | None]:
    answers = {q: _search(tenant, q)["results"] for q in QUESTIONS}
    return {q: results[0]["document_id"] if results else None for q, results in answers.items()}


def _serving(stack, worker: str) -> tuple[str, int]:
    status, health = Client(stack.url(worker)).get("/health")
    assert status == 200, health
    return health["bindings"]["AI"]["model_id"], health["pid"]


def _models(stack, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "edgeindex.cli", "models", *args, "--dsn", stack.dsn, "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rows(stack, sql: str, *params) -> list[dict]:
    with psycopg.connect(stack.dsn, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def _chunk_vectors(stack, entity_id: str) -> dict[str, tuple[str, str]]:
    """Each chunk of the entity: (its model, its vector as text)."""
    return {r["id"]: (r["model_id"], r["embedding"]) for r in _rows(
        stack, "SELECT id::text, model_id, embedding::text FROM chunks WHERE entity_id = %s", entity_id)}


@pytest.fixture(scope="module")
def shadowed(stack, tenant):
    """The questions searched once e5's vectors are backfilled beside MiniLM's (MODEL_SHADOW: e5, every
    answer): each answer, and the shadow row it left."""
    _models(stack, "backfill", "--to", "multilingual-e5-small", "--duty", "1")
    answers = {q: _search(tenant, q, k=3) for q in QUESTIONS}
    ids = [a["search_id"] for a in answers.values()]
    sql = "SELECT * FROM model_shadow_searches WHERE search_id = ANY(%s)"
    asyncio.run(wait_for(lambda: len(_rows(stack, sql, ids)) == len(ids), timeout=60))
    return answers, {r["search_id"]: r for r in _rows(stack, sql, ids)}


def test_shadow_mode_logs_the_served_answer_beside_the_shadow_models(stack, tenant, shadowed):
    answers, rows = shadowed
    documents = {r["id"]: r["document_id"] for r in _rows(
        stack, "SELECT id::text, document_id FROM chunks WHERE entity_id = %s", tenant.entity_id)}
    for answer in answers.values():
        row = rows[answer["search_id"]]
        assert (row["serving_model"], row["shadow_model"], row["k"]) == (LOCAL_MODEL_ID, E5_ID, 3)
        assert row["served"] == [r["chunk_id"] for r in answer["results"]]
    # the shadow model finds every question's document by meaning; the serving one does not
    assert {q: documents[rows[a["search_id"]]["shadow"][0]] for q, a in answers.items()} == QUESTIONS
    assert {q: a["results"][0]["document_id"] for q, a in answers.items()} != QUESTIONS
    summary = {(s["shadow_model"], s["serving_model"]): s for s in _models(stack, "status")["shadow"]}
    assert summary[(E5_ID, LOCAL_MODEL_ID)]["searches"] >= len(QUESTIONS)


def test_workers_load_and_prepare_a_backfilled_model_before_its_cutover(stack, shadowed):
    # the ingest worker has no shadow model: it loads e5 once its backfill is done, before any cutover
    line = f"worker ingest: {E5_ID} is backfilled for a cutover: loaded and prepared it"
    asyncio.run(wait_for(lambda: line in stack.log_path.read_text(), timeout=120, interval=0.5))
    assert _serving(stack, "ingest")[0] == LOCAL_MODEL_ID


def test_models_compare_ranks_both_models_against_the_deployments_feedback(stack, tenant, shadowed):
    # an agent's feedback: for each question, the chunk of its document was the useful one
    chunk_of = {r["document_id"]: r["id"] for r in _rows(
        stack, "SELECT id::text, document_id FROM chunks WHERE entity_id = %s", tenant.entity_id)}
    for question, document in QUESTIONS.items():
        answer = _search(tenant, question, k=20)
        assert chunk_of[document] in [r["chunk_id"] for r in answer["results"]]
        status, body = tenant.search.post("/feedback", {"search_id": answer["search_id"],
                                                         "useful": [chunk_of[document]]})
        assert status == 200, body
    result = _models(stack, "compare", "multilingual-e5-small", "--k", "1")
    assert (result["queries"], result["left_out"], result["relevant_per_query"]) == (len(QUESTIONS), 0, 1.0)
    # e5 ranks each question's useful chunk first by meaning; MiniLM's vectors miss most of them
    assert result["models"][E5_ID]["recall@1"] == 1.0
    assert result["models"][LOCAL_MODEL_ID]["recall@1"] < 1.0
    assert result["difference"]["recall@1"]["worse"] == 0 and result["difference"]["recall@1"]["better"] >= 1


TOOLS = [
    {"name": "get_weather", "description": "Current weather and forecast for a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
     "examples": ["will it rain in Cairo tomorrow?"]},
    {"name": "convert_currency", "description": "Convert an amount between two currencies at today's rate.",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "to": {"type": "string"}}}},
]
INDICES = [
    {"name": "shop", "description": "The online shop's database.",
     "fields": ["orders.id", "orders.total", "orders.placed_at", "customers.id", "customers.email"]},
    {"name": "rivers", "description": "Hydrology measurements of the great rivers.",
     "fields": ["river", "flow_m3s", "station"]},
]
# (table, what its rows embed): every catalogue row a cutover re-embeds
CATALOGUE_TABLES = ("tools", "tool_examples", "index_descriptors", "index_parts")


@pytest.fixture(scope="module")
def catalogue(stack, tenant):
    """Tools (with an example and a learned one), indices (one with parts) and a collection, all
    embedded with the first model; the rows' models per table."""
    for path, body in ((f"/entities/{tenant.entity_id}/tools", {"tools": TOOLS}),
                       (f"/entities/{tenant.entity_id}/indices", {"indices": INDICES}),
                       ("/tools/feedback", {"entity_ids": [tenant.entity_id], "query": "how much is 20 euros in yen",
                                            "used": ["convert_currency"]})):
        status, answer = tenant.search.post(path, body)
        assert status == 200, answer
    # a collection on a subject none of the questions asks about
    put_document(tenant, "invoices", "Invoices are numbered by year and office, then in order of issue.",
                 collection="accounting")
    assert asyncio.run(wait_document(tenant, "invoices", timeout=300))["status"] == "ready"
    sql = "SELECT kind FROM index_descriptors WHERE entity_id = %s AND name = 'accounting'"
    asyncio.run(wait_for(lambda: _rows(stack, sql, tenant.entity_id), timeout=60))
    return _catalogue_models(stack, tenant)


def _catalogue_models(stack, tenant) -> dict[str, list[str]]:
    return {table: [r["model_id"] for r in _rows(stack, f"SELECT model_id FROM {table} WHERE entity_id = %s",
                                                 tenant.entity_id)] for table in CATALOGUE_TABLES}


def _select(tenant, kind: str, query: str) -> dict:
    status, answer = tenant.search.post(f"/{kind}/select", {"query": query, "entity_ids": [tenant.entity_id]})
    assert status == 200, answer
    return answer


@pytest.fixture(scope="module")
def cut(stack, tenant, shadowed, catalogue):
    """The cutover, with an agent searching the whole time; what the stack was before it."""
    before = {"found": _found(tenant), "search": _serving(stack, "search"), "ingest": _serving(stack, "ingest"),
              "answer_model": _search(tenant, "نهر النيل", cache=False)["model_id"],
              "vectors": {r["id"]: r["embedding"] for r in _rows(
                  stack, "SELECT id::text, embedding::text FROM chunks WHERE entity_id = %s", tenant.entity_id)}}
    assert _search(tenant, CACHED_QUESTION, **CACHED)["cache"] == "none"
    assert _search(tenant, CACHED_QUESTION, **CACHED)["cache"] == "exact"
    statuses: list[int] = []
    stop = threading.Event()

    def agent():
        while not stop.is_set():
            status, _ = tenant.search.post("/search", {"query": "نهر النيل", "entity_ids": [tenant.entity_id],
                                                       "cache": False})
            statuses.append(status)

    async def cutover_with_a_run_in_flight() -> tuple[dict, dict]:
        # a document embedded with the old model waits before its upsert until the workers switched
        db = Database(stack.dsn, max_size=2, name="TEST")
        await db.open()
        try:
            async with Hold(db, "ingest:upsert", tenant.entity_id, "held") as hold:
                put_document(tenant, "held", HELD)
                await hold.reached(timeout=300)
                result = await asyncio.to_thread(_models, stack, "cutover", "--to", "multilingual-e5-small")
                await wait_for(lambda: _serving(stack, "search")[0] == E5_ID and _serving(stack, "ingest")[0] == E5_ID,
                               timeout=300)
            return result, await wait_document(tenant, "held", timeout=300)
        finally:
            await db.close()

    searching = threading.Thread(target=agent)
    searching.start()
    try:
        result, held = asyncio.run(cutover_with_a_run_in_flight())
    finally:
        stop.set()
        searching.join()
    return {"before": before, "result": result, "statuses": statuses, "held": held}


def test_the_stack_starts_on_the_english_model_which_misses_arabic_questions(cut):
    assert cut["before"]["search"][0] == LOCAL_MODEL_ID
    assert sum(cut["before"]["found"][q] == d for q, d in QUESTIONS.items()) < len(QUESTIONS)


def test_a_cutover_swaps_every_chunk_and_keeps_the_old_vectors(stack, tenant, cut):
    assert (cut["result"]["from_model"], cut["result"]["to_model"]) == (LOCAL_MODEL_ID, E5_ID)
    models = {r["model_id"] for r in _rows(stack, "SELECT DISTINCT model_id FROM chunks")}
    assert models == {E5_ID}
    kept = {r["id"]: r["embedding"] for r in _rows(
        stack, "SELECT chunk_id::text AS id, embedding::text FROM chunk_vectors WHERE model_id = %s AND entity_id = %s",
        LOCAL_MODEL_ID, tenant.entity_id)}
    assert kept == cut["before"]["vectors"]
    assert _rows(stack, "SELECT model_id FROM embedding_model") == [{"model_id": E5_ID}]


def test_a_cutover_re_embeds_every_catalogue_row_in_its_commit(stack, tenant, catalogue, cut):
    assert {t: len(models) for t, models in catalogue.items()} == {
        "tools": 2, "tool_examples": 2, "index_descriptors": 3, "index_parts": 2}
    assert {m for models in catalogue.values() for m in models} == {LOCAL_MODEL_ID}
    assert {m for models in _catalogue_models(stack, tenant).values() for m in models} == {E5_ID}
    assert cut["result"]["catalogues"] == {"tools": 2, "examples": 2, "indices": 3, "parts": 2}


def test_tool_and_index_selection_answer_with_the_new_model_after_a_cutover(tenant, cut):
    tools = _select(tenant, "tools", "ما حالة الطقس في القاهرة؟")   # "what is the weather in Cairo?"
    assert (tools["model_id"], tools["tools"][0]["name"]) == (E5_ID, "get_weather")
    indices = _select(tenant, "indices", "which customers placed the largest orders")
    assert indices["indices"][0]["name"] == "shop"


def test_a_worker_still_on_the_old_model_is_told_to_retry_and_writes_nothing(stack, tenant, cut):
    from edgeindex.bindings.ai import local_embedder
    from edgeindex.errors import ModelSwitching
    from edgeindex.selection import tools

    async def as_an_old_worker() -> list[str]:
        db = Database(stack.dsn, max_size=2, name="TEST")
        await db.open()
        old = await asyncio.to_thread(local_embedder, 16)
        outcomes = []
        try:
            for attempt in (tools.register(db, old, tenant.entity_id, {"tools": TOOLS[:1]}),
                            tools.select(db, old, [tenant.entity_id], tools.SelectRequest("weather in Cairo", [tenant.entity_id], 5, 0.5, True,
                                                                                  False, False))):
                try:
                    await attempt
                    outcomes.append("done")
                except ModelSwitching as exc:
                    outcomes.append(exc.status)
        finally:
            await db.close()
        return outcomes

    assert asyncio.run(as_an_old_worker()) == [503, 503]
    assert set(_catalogue_models(stack, tenant)["tools"]) == {E5_ID}


def test_searches_answer_throughout_the_cutover(cut):
    assert len(cut["statuses"]) >= 5
    assert set(cut["statuses"]) == {200}


def test_running_workers_switch_to_the_new_model_without_a_restart(stack, cut):
    assert _serving(stack, "search") == (E5_ID, cut["before"]["search"][1])
    assert _serving(stack, "ingest") == (E5_ID, cut["before"]["ingest"][1])


def test_an_answer_names_the_model_of_its_query_vector(tenant, cut):
    assert cut["before"]["answer_model"] == LOCAL_MODEL_ID
    assert _search(tenant, "نهر النيل", cache=False)["model_id"] == E5_ID


def test_after_the_cutover_the_arabic_questions_are_found_by_meaning(tenant, cut):
    assert _found(tenant) == QUESTIONS


def test_an_answer_cached_before_the_cutover_is_not_served_after_it(tenant, cut):
    assert _search(tenant, CACHED_QUESTION, **CACHED)["cache"] == "none"


@pytest.fixture(scope="module")
def written_after(stack, tenant, cut):
    """A document uploaded once the workers switched: its chunks' models."""
    put_document(tenant, "desert-2", "تمتد صحراء الربع الخالي في جنوب شبه الجزيرة العربية.")
    assert asyncio.run(wait_document(tenant, "desert-2", timeout=300))["status"] == "ready"
    return [r["model_id"] for r in _rows(
        stack, "SELECT model_id FROM chunks WHERE entity_id = %s AND document_id = 'desert-2'", tenant.entity_id)]


def test_a_run_embedded_with_the_old_model_writes_the_new_models_vectors_after_the_cutover(stack, tenant, cut):
    assert cut["held"]["status"] == "ready", cut["held"]
    rows = _rows(stack, "SELECT model_id FROM chunks WHERE entity_id = %s AND document_id = 'held'", tenant.entity_id)
    assert rows and {r["model_id"] for r in rows} == {E5_ID}


def test_a_document_written_after_the_cutover_is_embedded_with_the_new_model(written_after):
    assert written_after and set(written_after) == {E5_ID}


def test_a_rollback_serves_the_old_model_and_its_kept_vectors_again(stack, tenant, cut, written_after):
    result = _models(stack, "rollback")
    assert (result["from_model"], result["to_model"], result["rollback"]) == (E5_ID, LOCAL_MODEL_ID, True)
    # the documents written in between had no vector of the old model: the rollback embedded them
    held = _rows(stack, "SELECT id FROM chunks WHERE entity_id = %s AND document_id = 'held'", tenant.entity_id)
    assert result["embedded_before"] + result["embedded_during"] == len(written_after) + len(held)
    asyncio.run(wait_for(lambda: _serving(stack, "search")[0] == LOCAL_MODEL_ID, timeout=300))
    now = _chunk_vectors(stack, tenant.entity_id)
    assert {m for m, _ in now.values()} == {LOCAL_MODEL_ID}
    assert {i: v for i, (_, v) in now.items() if i in cut["before"]["vectors"]} == cut["before"]["vectors"]
    status = _models(stack, "status")
    assert [(c["from_model"], c["to_model"], c["rollback"]) for c in status["cutovers"]] == [
        (LOCAL_MODEL_ID, E5_ID, False), (E5_ID, LOCAL_MODEL_ID, True)]
    kept = {m["model_id"]: (m["state"], m["covered"]) for m in status["models"]}
    assert kept == {E5_ID: ("done", 1.0)}   # the replaced model's vectors, kept until dropped
    assert {m for models in _catalogue_models(stack, tenant).values() for m in models} == {LOCAL_MODEL_ID}
    assert _select(tenant, "tools", "weather forecast for Oslo")["tools"][0]["name"] == "get_weather"


def _jobs(admin) -> list[dict]:
    status, models = admin.get("/admin/api/models")
    assert status == 200, models
    return models["jobs"]


def _job_done(admin, job_id: int) -> dict:
    def ended():
        job = next(j for j in _jobs(admin) if j["id"] == job_id)
        return job if job["state"] not in ("queued", "running") else None
    return asyncio.run(wait_for(ended, timeout=300, interval=0.5))


def _wait_answers_of(tenant, model_id: str) -> None:
    """Until the search worker answers with ``model_id``'s query vectors (it has swapped its services)."""
    asyncio.run(wait_for(lambda: _search(tenant, "نهر النيل")["model_id"] == model_id, timeout=300, interval=0.5))


def test_the_admin_api_refuses_a_job_it_cannot_run_naming_the_field(stack, cut, written_after):
    admin = Client(stack.url("upload"), stack.admin_key)
    for body, status, field in (({"action": "explode", "model": "multilingual-e5-small"}, 400, "action"),
                                ({"action": "migrate", "model": "no-such-model"}, 400, "model"),
                                ({"action": "migrate"}, 400, "model"),
                                ({"action": "migrate", "model": "multilingual-e5-small", "duty": 0}, 400, "duty"),
                                ({"action": "rollback", "model": "multilingual-e5-small"}, 400, "model"),
                                ({"action": "cutover", "model": "multilingual-e5-small", "entity_ids": []}, 400,
                                 "entity_ids"),
                                ({"action": "cutover", "model": "multilingual-e5-small", "entity_ids": ["nobody"]},
                                 404, "entity_ids")):
        got, answer = admin.post("/admin/api/models/jobs", body)
        assert (got, answer.get("field")) == (status, field), (body, answer)
    serving = _serving(stack, "search")[0]
    got, answer = admin.post("/admin/api/models/jobs", {"action": "cutover", "model": serving})
    assert (got, answer["error"], answer["field"]) == (409, "conflict", "model")
    assert admin.post("/admin/api/models/jobs/abc/stop")[1]["field"] == "id"
    assert admin.post("/admin/api/models/jobs/999999/stop")[0] == 404
    assert Client(stack.url("upload")).post("/admin/api/models/jobs", {"action": "rollback"})[0] == 401


def test_the_admin_api_migrates_through_an_ingest_worker_and_rolls_back(stack, tenant, cut, written_after):
    admin = Client(stack.url("upload"), stack.admin_key)
    assert _serving(stack, "search")[0] == LOCAL_MODEL_ID     # after the CLI's rollback
    status, dropped = admin.post("/admin/api/models/drop", {"model": "multilingual-e5-small"})
    assert status == 200 and dropped["model_id"] == E5_ID and dropped["deleted"] > 0, dropped
    status, job = admin.post("/admin/api/models/jobs", {"action": "migrate", "model": "multilingual-e5-small",
                                                        "duty": 1})
    assert status == 202 and (job["state"], job["model_id"]) == ("queued", E5_ID), job
    # one job at a time: the first is queued or running for seconds yet (a model load, a backfill, a cutover)
    status, refused = admin.post("/admin/api/models/jobs", {"action": "backfill", "model": "multilingual-e5-small"})
    assert (status, refused["field"]) == (409, "action"), refused
    done = _job_done(admin, job["id"])
    chunks = _rows(stack, "SELECT count(*) AS n FROM chunks")[0]["n"]
    assert done["state"] == "done", done
    assert done["result"]["backfill"]["embedded"] == chunks      # every chunk: its vectors were dropped
    assert done["result"]["cutover"]["to_model"] == E5_ID
    _wait_answers_of(tenant, E5_ID)
    assert _found(tenant) == QUESTIONS
    assert {m for models in _catalogue_models(stack, tenant).values() for m in models} == {E5_ID}

    status, job = admin.post("/admin/api/models/jobs", {"action": "rollback"})
    assert status == 202 and job["model_id"] == LOCAL_MODEL_ID, job
    assert _job_done(admin, job["id"])["state"] == "done"
    _wait_answers_of(tenant, LOCAL_MODEL_ID)


def test_a_job_whose_runner_was_lost_is_claimed_again_and_finished(stack, cut, written_after):
    # as if the ingest worker running it was killed: running, its lease run out
    admin = Client(stack.url("upload"), stack.admin_key)
    with psycopg.connect(stack.dsn, row_factory=dict_row, autocommit=True) as conn:
        job_id = conn.execute("INSERT INTO model_jobs (action, model_id, duty, state, attempts, lease_until) "
                              "VALUES ('backfill', %s, 1, 'running', 1, now() - interval '1 minute') RETURNING id",
                              (E5_ID,)).fetchone()["id"]
    done = _job_done(admin, job_id)
    assert (done["state"], done["attempts"]) == ("done", 2), done
    assert done["result"]["backfill"]["embedded"] == 0      # e5's vectors were kept by the rollback


# --- one entity on another model (cutover --entity) ---------------------------------------------

@pytest.fixture(scope="module")
def other(stack, written_after):
    """A second tenant with the same Arabic documents, on the deployment's model throughout."""
    return _tenant_with_documents(stack, "stay")


@pytest.fixture(scope="module")
def entity_cut(stack, tenant, other, written_after):
    """``cutover --entity``: the first tenant moves to e5 while the deployment (and the other tenant)
    stays on MiniLM; what its chunks and a cached answer were before."""
    assert _serving(stack, "search")[0] == LOCAL_MODEL_ID   # the admin API's rollback
    before = _chunk_vectors(stack, tenant.entity_id)
    _search(tenant, CACHED_QUESTION, **CACHED)   # stored, if no earlier test left it cached
    assert _search(tenant, CACHED_QUESTION, **CACHED)["cache"] == "exact"
    result = _models(stack, "cutover", "--to", "multilingual-e5-small", "--entity", tenant.entity_id)
    _wait_answers_of(tenant, E5_ID)
    return {"before": before, "result": result}


def test_an_entity_cutover_moves_that_entitys_chunks_alone_and_keeps_their_vectors(stack, tenant, other, entity_cut):
    result = entity_cut["result"]
    assert (result["from_model"], result["to_model"], result["entity_ids"]) == (
        LOCAL_MODEL_ID, E5_ID, [tenant.entity_id])
    assert result["chunks"] == len(entity_cut["before"])
    assert {m for m, _ in _chunk_vectors(stack, tenant.entity_id).values()} == {E5_ID}
    assert {m for m, _ in _chunk_vectors(stack, other.entity_id).values()} == {LOCAL_MODEL_ID}
    assert _rows(stack, "SELECT model_id FROM embedding_model")[0]["model_id"] == LOCAL_MODEL_ID
    kept = {r["id"]: (LOCAL_MODEL_ID, r["embedding"]) for r in _rows(
        stack, "SELECT chunk_id::text AS id, embedding::text FROM chunk_vectors WHERE model_id = %s AND entity_id = %s",
        LOCAL_MODEL_ID, tenant.entity_id)}
    assert kept == entity_cut["before"]
    status = _models(stack, "status")
    assert status["serving"]["model_id"] == LOCAL_MODEL_ID and status["entities"] == {tenant.entity_id: E5_ID}
    assert status["cutovers"][-1]["entity_ids"] == [tenant.entity_id]


def test_each_entity_is_searched_with_the_model_that_serves_it(stack, tenant, other, entity_cut):
    assert Client(stack.url("search")).get("/health")[1]["entity_models"] == {tenant.entity_id: E5_ID}
    assert _found(tenant) == QUESTIONS
    assert _search(other, "نهر النيل")["model_id"] == LOCAL_MODEL_ID
    assert sum(found == QUESTIONS[q] for q, found in _found(other).items()) < len(QUESTIONS)


def test_a_search_over_entities_of_two_models_is_answered_by_the_deployments_model(stack, tenant, other, entity_cut):
    admin = Client(stack.url("search"), stack.admin_key)
    status, answer = admin.post("/search", {"query": "نهر النيل", "entity_ids": [tenant.entity_id, other.entity_id],
                                            "cache": False})
    assert status == 200 and answer["model_id"] == LOCAL_MODEL_ID, answer


def test_an_answer_cached_before_an_entity_cutover_is_not_served_after_it(tenant, entity_cut):
    assert _search(tenant, CACHED_QUESTION, **CACHED)["cache"] == "none"


def test_an_entity_on_another_model_keeps_the_deployments_catalogues(stack, tenant, entity_cut):
    assert {m for models in _catalogue_models(stack, tenant).values() for m in models} == {LOCAL_MODEL_ID}
    assert _select(tenant, "tools", "weather forecast for Oslo")["tools"][0]["name"] == "get_weather"
    answer = _search(tenant, "How are invoices numbered?", collections="auto")
    assert answer["results"] and answer["results"][0]["document_id"] == "invoices", answer


def test_documents_are_embedded_with_the_model_of_their_entity(stack, tenant, other, entity_cut):
    text = "يصب نهر الأردن في البحر الميت، أخفض نقطة على سطح الأرض."
    for who in (tenant, other):
        put_document(who, "jordan", text)
        assert asyncio.run(wait_document(who, "jordan", timeout=300))["status"] == "ready"
    sql = "SELECT DISTINCT model_id FROM chunks WHERE entity_id = %s AND document_id = 'jordan'"
    assert [r["model_id"] for r in _rows(stack, sql, tenant.entity_id)] == [E5_ID]
    assert [r["model_id"] for r in _rows(stack, sql, other.entity_id)] == [LOCAL_MODEL_ID]


def test_an_entity_rollback_returns_it_to_the_deployments_model_and_its_kept_vectors(stack, tenant, entity_cut):
    result = _models(stack, "rollback", "--entity", tenant.entity_id)
    assert (result["from_model"], result["to_model"], result["rollback"], result["entity_ids"]) == (
        E5_ID, LOCAL_MODEL_ID, True, [tenant.entity_id])
    now = _chunk_vectors(stack, tenant.entity_id)
    assert {m for m, _ in now.values()} == {LOCAL_MODEL_ID}
    assert {i: v for i, v in now.items() if i in entity_cut["before"]} == entity_cut["before"]
    assert _models(stack, "status")["entities"] == {}
    _wait_answers_of(tenant, LOCAL_MODEL_ID)
    assert Client(stack.url("search")).get("/health")[1]["entity_models"] == {}


def test_a_deployment_cutover_moves_every_entity_and_keeps_each_chunks_own_models_vector(stack, tenant, other,
                                                                                          entity_cut):
    # after the rollback above: the tenant on e5 again, the other on MiniLM, then the whole deployment to e5
    _models(stack, "cutover", "--to", "multilingual-e5-small", "--entity", tenant.entity_id)
    before = {e: _chunk_vectors(stack, e) for e in (tenant.entity_id, other.entity_id)}
    result = _models(stack, "cutover", "--to", "multilingual-e5-small")
    try:
        assert result["entity_ids"] is None
        assert result["chunks"] == len(before[other.entity_id])   # the tenant's were e5's already
        for entity_id in (tenant.entity_id, other.entity_id):
            now = _chunk_vectors(stack, entity_id)
            assert {m for m, _ in now.values()} == {E5_ID}
        kept = {r["id"]: (r["model_id"], r["embedding"]) for r in _rows(
            stack, "SELECT chunk_id::text AS id, model_id, embedding::text FROM chunk_vectors "
                   "WHERE entity_id = %s AND model_id = %s", other.entity_id, LOCAL_MODEL_ID)}
        assert kept == before[other.entity_id]
        assert _models(stack, "status")["entities"] == {}
        _wait_answers_of(other, E5_ID)
    finally:
        _models(stack, "rollback")
    _wait_answers_of(other, LOCAL_MODEL_ID)


def test_the_admin_api_cuts_one_entity_over_and_back(stack, tenant, other, entity_cut):
    admin = Client(stack.url("upload"), stack.admin_key)
    status, job = admin.post("/admin/api/models/jobs", {"action": "cutover", "model": "multilingual-e5-small",
                                                        "entity_ids": [tenant.entity_id]})
    assert status == 202 and job["entity_ids"] == [tenant.entity_id], job
    done = _job_done(admin, job["id"])
    assert done["state"] == "done" and done["result"]["cutover"]["entity_ids"] == [tenant.entity_id], done
    _wait_answers_of(tenant, E5_ID)
    assert _search(other, "نهر النيل")["model_id"] == LOCAL_MODEL_ID
    status, models = admin.get("/admin/api/models")
    assert status == 200 and models["entities"] == {tenant.entity_id: E5_ID}, models

    status, job = admin.post("/admin/api/models/jobs", {"action": "rollback", "entity_ids": [tenant.entity_id]})
    assert status == 202 and job["model_id"] == LOCAL_MODEL_ID, job
    assert _job_done(admin, job["id"])["state"] == "done"
    _wait_answers_of(tenant, LOCAL_MODEL_ID)
    assert {m for m, _ in _chunk_vectors(stack, tenant.entity_id).values()} == {LOCAL_MODEL_ID}
