"""A second embedding model's vectors beside the serving model's (``edgeindex models``), on the shared
stack (all-MiniLM-L6-v2 serving) with the real multilingual-e5-small: the backfill stores one vector per
chunk with its model and dimension, each the model's own embedding of the chunk's text, leaves the
serving vectors alone, goes on after a stop or a kill -9 without embedding again what it finished, and
embeds a rewritten document's new chunks only."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import Conflict
from edgeindex.models import backfill as backfills

from ..helpers import new_tenant, put_document, wait_document, wait_for
from .test_openapi import response_validator, spec_of

E5_ID = "intfloat/multilingual-e5-small"
PARAGRAPHS = {
    "mauer": ["Die Berliner Mauer wurde am 13. August 1961 errichtet.",
              "Sie trennte über 28 Jahre Ost- und West-Berlin.",
              "Im November 1989 fiel sie, und Deutschland wurde im Jahr darauf vereinigt."],
    "tea": ["Tea is brewed from the leaves of Camellia sinensis.",
            "Green tea is steamed or pan-fired soon after picking.",
            "Black tea is oxidised before it is dried, which darkens the leaves."],
    "kaffee": ["咖啡原产于非洲埃塞俄比亚。", "后来经由阿拉伯半岛传播到世界各地。", "今天巴西是最大的咖啡生产国。"],
}
# Each paragraph said nine times over (numbered) is about 130 tokens: a chunk of its own, so a
# document is three chunks and an edit to one paragraph replaces one chunk.
TEXTS = {name: "\n\n".join(" ".join(f"{sentence} ({n})" for n in range(9)) for sentence in paragraphs)
         for name, paragraphs in PARAGRAPHS.items()}


@pytest.fixture(scope="module")
def e5():
    return local_embedder(model="multilingual-e5-small")


class Counting:
    """The real e5 embedder, recording each text it was asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.model_id, self.dimension, self.texts = inner, inner.model_id, inner.dimension, []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


async def _entity_with_documents(stack, upload_admin) -> str:
    tenant = new_tenant(stack, upload_admin, prefix="mb")
    for document_id, text in TEXTS.items():
        put_document(tenant, document_id, text, content_type="text/markdown")
    for document_id in TEXTS:
        assert (await wait_document(tenant, document_id))["status"] == "ready"
    return tenant.entity_id


async def _vectors(db, entity_id: str) -> dict[str, dict]:
    rows = await db.fetch("SELECT v.chunk_id::text AS id, v.dimension, v.embedding, v.content_hash = c.content_hash "
                          "AS current, c.content, c.model_id AS chunk_model FROM chunk_vectors v JOIN chunks c "
                          "ON c.entity_id = v.entity_id AND c.id = v.chunk_id "
                          "WHERE v.model_id = %s AND v.entity_id = %s", (E5_ID, entity_id))
    return {r["id"]: r for r in rows}


async def _chunk_ids(db, entity_id: str) -> set[str]:
    return {r["id"] for r in await db.fetch("SELECT id::text FROM chunks WHERE entity_id = %s", (entity_id,))}


async def test_a_backfill_stores_each_chunks_vector_of_the_second_model_beside_the_serving_one(
        stack, upload_admin, db, e5):
    entity = await _entity_with_documents(stack, upload_admin)
    serving_before = await db.fetch("SELECT id::text, embedding FROM chunks WHERE entity_id = %s", (entity,))
    progress = await backfills.backfill(db, e5, entity_ids=[entity], batch=2, duty=1)
    assert progress.embedded == len(serving_before) >= 9 and not progress.stopped
    vectors = await _vectors(db, entity)
    assert set(vectors) == {r["id"] for r in serving_before}
    contents = [v["content"] for v in vectors.values()]
    expected = await e5.embed(contents)
    for row, want in zip(vectors.values(), expected, strict=True):
        assert row["dimension"] == 384 and row["current"]
        assert row["chunk_model"] == "sentence-transformers/all-MiniLM-L6-v2"  # the serving model's rows
        got = np.asarray(row["embedding"].to_numpy())
        assert float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want))) > 0.999
    serving_after = {r["id"]: r["embedding"].to_numpy() for r in
                     await db.fetch("SELECT id::text, embedding FROM chunks WHERE entity_id = %s", (entity,))}
    for row in serving_before:
        assert np.array_equal(serving_after[row["id"]], row["embedding"].to_numpy())
    status = await backfills.status(db)
    assert status["serving"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    (mine,) = [m for m in status["models"] if m["model_id"] == E5_ID and m["entity_ids"] == [entity]]
    assert (mine["state"], mine["vectors"], mine["chunks"], mine["covered"]) == ("done", len(vectors), len(vectors), 1.0)
    # the same through the admin API, as its schema documents it
    code, answer = upload_admin.get("/admin/api/models")
    assert code == 200 and {k: answer[k] for k in status} == json.loads(json.dumps(status))
    assert (answer["cutovers"], answer["jobs"]) == ([], [])   # this stack's model never changed
    response_validator(spec_of(stack, "upload"), "/admin/api/models", "get", 200).validate(answer)


async def test_a_stopped_backfill_goes_on_without_embedding_again_what_it_finished(stack, upload_admin, db, e5):
    entity = await _entity_with_documents(stack, upload_admin)
    total = len(await _chunk_ids(db, entity))
    first = Counting(e5)
    stopped = await backfills.backfill(db, first, entity_ids=[entity], batch=2, duty=1,
                                       should_stop=lambda: len(first.texts) >= 2)
    assert stopped.stopped and stopped.embedded == 2 and len(await _vectors(db, entity)) == 2
    second = Counting(e5)
    finished = await backfills.backfill(db, second, entity_ids=[entity], batch=2, duty=1)
    assert not finished.stopped and finished.embedded == total - 2
    assert not set(first.texts) & set(second.texts)
    assert len(await _vectors(db, entity)) == total


async def test_a_rewritten_document_drops_its_old_vectors_and_only_its_new_chunks_are_embedded(
        stack, upload_admin, db, e5):
    tenant = new_tenant(stack, upload_admin, prefix="mr")
    put_document(tenant, "tea", TEXTS["tea"], content_type="text/markdown")
    assert (await wait_document(tenant, "tea"))["status"] == "ready"
    await backfills.backfill(db, e5, entity_ids=[tenant.entity_id], duty=1)
    before = set(await _vectors(db, tenant.entity_id))
    edited = TEXTS["tea"].replace("Green tea is steamed", "Oolong is partly oxidised; green tea is steamed")
    assert edited.count("Oolong") == 9
    version = put_document(tenant, "tea", edited, content_type="text/markdown")["version"]
    assert (await wait_document(tenant, "tea", version=version))["status"] == "ready"
    live = await _chunk_ids(db, tenant.entity_id)
    kept = set(await _vectors(db, tenant.entity_id))
    assert kept == before & live and kept != live  # the replaced chunk's vector went with it
    again = Counting(e5)
    await backfills.backfill(db, again, entity_ids=[tenant.entity_id], duty=1)
    assert len(again.texts) == len(live - kept) >= 1 and any("Oolong" in t for t in again.texts)
    assert set(await _vectors(db, tenant.entity_id)) == live


async def test_the_serving_model_is_not_backfilled(db):
    with pytest.raises(Conflict, match="serving model"):
        await backfills.backfill(db, local_embedder())


async def test_the_command_killed_mid_backfill_goes_on_from_what_it_wrote(stack, upload_admin, db):
    entity = await _entity_with_documents(stack, upload_admin)
    total = len(await _chunk_ids(db, entity))
    command = [sys.executable, "-m", "edgeindex.cli", "models", "backfill", "--to", "multilingual-e5-small",
               "--entity", entity, "--batch", "1", "--duty", "0.2", "--dsn", stack.dsn, "--json"]
    killed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        await wait_for(lambda: _count(db, entity, 1), timeout=180)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    written = set(await _vectors(db, entity))
    assert 1 <= len(written) < total
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["model_id"], result["embedded"], result["stopped"]) == (E5_ID, total - len(written), False)
    assert set(await _vectors(db, entity)) == await _chunk_ids(db, entity)


async def _count(db, entity: str, at_least: int) -> bool:
    row = await db.fetchone("SELECT count(*) AS n FROM chunk_vectors WHERE model_id = %s AND entity_id = %s",
                            (E5_ID, entity))
    return row["n"] >= at_least
