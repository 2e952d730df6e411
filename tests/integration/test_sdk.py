"""The Python SDK (clients/python) against the shared stack, sync and async, and its retries."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from edgeindex_client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    IndexRegistration,
    IndexSelection,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    SelectedIndex,
    SelectedTool,
    ServerError,
    ToolSelection,
    UnsupportedMediaTypeError,
)

FACTS = {
    "pumps": "The bilge pump on deck three is serviced every ninety days by the engineering crew.",
    "lights": "Navigation lights are checked at dusk; a failed lamp is replaced before the ship leaves port.",
    "galley": "The galley freezer holds provisions for forty days; its thermostat alarm rings below minus fifteen.",
}
_ids = iter(range(1, 1_000_000))


def unique(prefix: str) -> str:
    return f"{prefix}{next(_ids)}-{os.getpid()}"


def clients(stack, key: str, **kw) -> dict:
    return dict(api_key=key, upload_url=stack.url("upload"), search_url=stack.url("search"), **kw)


@pytest.fixture(scope="module")
def admin(stack):
    with Client(**clients(stack, stack.admin_key)) as client:
        yield client


def make_tenant(admin: Client) -> tuple[str, str]:
    entity = admin.create_entity(unique("sdk"), "user", name="SDK test")
    key = admin.create_key(f"key for {entity.id}", [entity.id])
    assert key.entity_ids == [entity.id] and key.key.startswith("ei_")
    return entity.id, key.key


def upload_facts(client: Client, entity: str) -> None:
    for name, text in FACTS.items():
        client.upload_text(entity, name, text)
    for name in FACTS:
        assert client.wait_ready(entity, name, timeout=120).status == "ready"


def write_files(folder, names=FACTS) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.md").write_text(f"# {name}\n\n{FACTS[name]}\n")


async def test_sync_client_uploads_by_every_path_and_searches(stack, admin, tmp_path):
    entity, key = make_tenant(admin)
    assert entity in [e.id for e in admin.list_entities()]
    write_files(tmp_path, ["lights", "galley"])
    with Client(**clients(stack, key)) as client:
        direct = client.upload_text(entity, "pumps", FACTS["pumps"], title="Pumps", tags=["engine"])
        presigned = client.upload_file(entity, tmp_path / "lights.md", mode="presigned")
        multipart = client.upload_file(entity, tmp_path / "galley.md", mode="multipart")
        assert (direct.status, direct.version) == ("pending", 1) and multipart.document_id == "galley.md"
        assert presigned.document_id == "lights.md" and presigned.content_type == "text/markdown"
        assert presigned.metadata == {"sha256": presigned.metadata["sha256"]} and len(presigned.metadata["sha256"]) == 64
        ready = {d: client.wait_ready(entity, d, timeout=120) for d in ("pumps", "lights.md", "galley.md")}
        assert {d: doc.status for d, doc in ready.items()} == dict.fromkeys(ready, "ready")
        assert ready["galley.md"].size_bytes == (tmp_path / "galley.md").stat().st_size
        assert ready["pumps"].title == "Pumps" and ready["pumps"].tags == ["engine"]

        found = client.search("when is the bilge pump serviced", entity_ids=[entity], k=3,
                              include={"summary": True})
        assert found.results[0].document_id == "pumps" and "ninety days" in found.results[0].text
        assert found.results[0].scores.vector > 0 and found.cache == "none" and found.count == len(found.results)
        filtered = client.search("freezer thermostat", entity_ids=[entity], filters={"document_ids": ["galley.md"]},
                                 alpha=0.0)
        assert [r.document_id for r in filtered.results] == ["galley.md"]

        # unchanged bytes: nothing is sent again, on the presigned path (hash in metadata) as on the direct one
        again = client.upload_file(entity, tmp_path / "lights.md", mode="presigned")
        assert again.unchanged and again.version == 1
        direct_again = client.upload_text(entity, "pumps", FACTS["pumps"], skip_unchanged=True)
        assert direct_again.unchanged and direct_again.version == 1

        page = client.list_documents(entity, limit=2)
        assert [d.document_id for d in page.documents] == ["galley.md", "lights.md"] and page.next_after == "lights.md"
        assert [d.document_id for d in client.iter_documents(entity, page_size=2)] == ["galley.md", "lights.md",
                                                                                       "pumps"]
        deleted = client.delete_document(entity, "lights.md")
        assert deleted.deleted and deleted.chunks_deleted == 1
        with pytest.raises(NotFoundError) as err:
            client.get_document(entity, "lights.md")
        assert err.value.field == "document_id"


async def test_async_client_uploads_a_folder_and_searches(stack, admin, tmp_path):
    entity, key = make_tenant(admin)
    write_files(tmp_path / "ship" / "deck", ["pumps", "lights"])
    write_files(tmp_path / "ship", ["galley"])
    (tmp_path / "ship" / ".hidden.md").write_text("not uploaded")
    async with AsyncClient(**clients(stack, key)) as client:
        seen = []
        outcomes = await client.upload_files(entity, [tmp_path / "ship"], concurrency=3, on_result=seen.append)
        assert sorted(o.document_id for o in outcomes) == ["deck/lights.md", "deck/pumps.md", "galley.md"]
        assert [o.error for o in outcomes] == [None, None, None] and len(seen) == 3
        for o in outcomes:
            assert (await client.wait_ready(entity, o.document_id)).status == "ready"
        found = await client.search("navigation lamp replaced before leaving port", entity_ids=[entity], k=1)
        assert found.results[0].document_id == "deck/lights.md"

        (tmp_path / "ship" / "galley.md").write_text("# galley\n\nThe galley now stocks provisions for sixty days.\n")
        second = await client.upload_files(entity, [tmp_path / "ship"])
        assert sorted((o.document_id, o.skipped) for o in second) == [
            ("deck/lights.md", True), ("deck/pumps.md", True), ("galley.md", False)]
        changed = await client.wait_ready(entity, "galley.md", version=2)
        assert changed.version == 2

        with pytest.raises(PermissionDeniedError) as err:
            await client.search("pump", entity_ids=[entity, "someone-else"])
        assert (err.value.status, err.value.code, err.value.field) == (403, "forbidden", "entity_ids")


SDK_TOOLS = [
    {"name": "PDF&URLTool", "description": "Download a PDF document from a web URL and extract its text.",
     "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}},
    {"name": "send_email", "description": "Send an email message to a recipient address."},
    {"name": "stock_price", "description": "Latest trading price of a stock ticker symbol."},
    {"name": "resize_image", "description": "Resize a picture to a given width and height in pixels."},
    {"name": "zodiac_sign", "description": "Astrological sign for a birth date."},
    {"name": "search_flights", "description": "Find airline flights between two airports on a date."},
]
SDK_INDICES = [
    {"name": "crew_roster", "description": "Crew members, their ranks, cabins and watch schedules.",
     "fields": ["crew.name", "crew.rank", "crew.cabin"]},
    {"name": "cargo_manifest", "description": "Containers loaded on the ship: weight, contents, destination port.",
     "fields": ["container_id", "weight_kg", "destination"], "tables": ["containers"]},
]


def test_sync_client_search_options_indices_and_typed_selections(stack, admin):
    entity, key = make_tenant(admin)
    with Client(**clients(stack, key)) as client:
        upload_facts(client, entity)
        query = "pump lamp freezer thermostat ship port"
        best_first = client.search(query, entity_ids=[entity], k=3, alpha=0.0, cache=False, order="best_first")
        assert len(best_first.results) == 3, best_first
        reverse = client.search(query, entity_ids=[entity], k=3, alpha=0.0, cache=False, order="reverse")
        assert [r.document_id for r in reverse.results] == [r.document_id for r in best_first.results][::-1]
        plain = client.search("bilge pump", entity_ids=[entity], alpha=0.0, cache=False, enhance="none")
        expanded = client.search("bilge pump", entity_ids=[entity], alpha=0.0, cache=False, enhance=["prf"])
        assert plain.enhancement is None and expanded.enhancement is not None, expanded
        assert "prf" in [*expanded.enhancement.get("applied", []), *expanded.enhancement.get("skipped", {})]

        registered = client.register_indices(entity, SDK_INDICES)
        assert isinstance(registered, IndexRegistration) and (registered.registered, registered.embedded) == (2, 2)
        picked = client.select_index("which cabin does the second officer sleep in", entity_ids=[entity], k=2)
        assert isinstance(picked, IndexSelection) and isinstance(picked.indices[0], SelectedIndex)
        assert picked.indices[0].name == "crew_roster", picked

        client.register_tools(entity, SDK_TOOLS)
        chosen = client.select_tools("extract the text of the PDF at this URL", entity_ids=[entity], k=2)
        assert isinstance(chosen, ToolSelection) and chosen.count == len(chosen.tools) >= 1
        first = chosen.tools[0]
        assert isinstance(first, SelectedTool), type(first)
        assert (first.name, first.definition["name"]) == ("PDF&URLTool", first.alias)
        assert first.alias is not None and first.alias.startswith("PDF_URLTool_") and first.score > 0


async def test_async_client_registers_indices_and_types_selected_tools(stack, admin):
    entity, key = make_tenant(admin)
    async with AsyncClient(**clients(stack, key)) as client:
        registered = await client.register_indices(entity, SDK_INDICES[:1])
        assert isinstance(registered, IndexRegistration) and registered.registered == 1
        await client.register_tools(entity, SDK_TOOLS)
        chosen = await client.select_tools("what is the share price of ACME", entity_ids=[entity], k=1)
        assert isinstance(chosen.tools[0], SelectedTool) and chosen.tools[0].name == "stock_price"
        assert chosen.tools[0].alias == "stock_price"


def test_errors_carry_the_servers_code_and_field(stack, admin):
    entity, key = make_tenant(admin)
    with Client(**clients(stack, key)) as client:
        with pytest.raises(BadRequestError) as err:
            client.search("pump", entity_ids=[entity], k=0)
        assert (err.value.status, err.value.code, err.value.field) == (400, "invalid_request", "k")
        with pytest.raises(BadRequestError) as err:
            client.search("pump", entity_ids=[entity], filters={"tags": []})
        assert err.value.field == "filters.tags"
        with pytest.raises(UnsupportedMediaTypeError) as err:
            client.upload_bytes(entity, "x", b"\x00\x01", content_type="image/png", mode="direct")
        assert (err.value.status, err.value.code, err.value.field) == (415, "unsupported_media_type", "Content-Type")
    with Client(**clients(stack, "ei_not-a-key")) as stranger:
        with pytest.raises(AuthenticationError) as err:
            stranger.search("pump", entity_ids=[entity])
        assert (err.value.code, err.value.field) == ("unauthorized", "Authorization")


# --- retries, against a tiny local server that answers from a script ------------------------------------

class Scripted:
    """An HTTP server answering each request with the next (status, headers, body) of its script."""

    def __init__(self, script: list[tuple[int, dict, dict]]) -> None:
        self.script = list(script)
        self.seen: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                owner.seen.append(f"{self.command} {self.path} {self.headers.get('Authorization')}")
                status, headers, body = owner.script.pop(0)
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


UNAVAILABLE = (503, {}, {"error": "binding", "message": "database is restarting"})
LIMITED = (429, {"Retry-After": "0"}, {"error": "rate_limited", "message": "slow down"})
DOC = {"document_id": "d", "entity_id": "e", "version": 1, "status": "ready"}


def test_sync_client_retries_503_and_429_then_succeeds():
    with Scripted([UNAVAILABLE, LIMITED, (200, {}, DOC)]) as server:
        with Client("ei_k", base_url=server.url, backoff=0.01, max_backoff=0.05) as client:
            doc = client.get_document("e", "d")
    assert doc.status == "ready"
    assert server.seen == ["GET /entities/e/documents/d Bearer ei_k"] * 3


async def test_async_client_retries_503_then_succeeds():
    with Scripted([UNAVAILABLE, UNAVAILABLE, (200, {}, DOC)]) as server:
        async with AsyncClient("ei_k", base_url=server.url, backoff=0.01, max_backoff=0.05) as client:
            doc = await client.get_document("e", "d")
    assert doc.version == 1 and len(server.seen) == 3


def test_retries_give_up_with_the_servers_error_and_do_not_retry_a_400():
    with Scripted([UNAVAILABLE] * 3) as server:
        with Client("ei_k", base_url=server.url, max_retries=2, backoff=0.01, max_backoff=0.02) as client:
            with pytest.raises(ServerError) as err:
                client.get_document("e", "d")
    assert (err.value.status, err.value.code, err.value.message) == (503, "binding", "database is restarting")
    assert len(server.seen) == 3
    with Scripted([LIMITED] * 2) as server:
        with Client("ei_k", base_url=server.url, max_retries=1, backoff=0.01) as client:
            with pytest.raises(RateLimitError):
                client.get_document("e", "d")
    bad = (400, {}, {"error": "invalid_request", "message": "k: too small", "field": "k"})
    with Scripted([bad, (200, {}, DOC)]) as server:
        with Client("ei_k", base_url=server.url, backoff=0.01) as client:
            with pytest.raises(BadRequestError) as err:
                client.search("q", k=0)
    assert err.value.field == "k" and len(server.seen) == 1


def test_ids_made_of_dots_reach_their_own_document(stack, admin):
    """'.' and '..' are valid document ids; an HTTP client resolves them as path steps unless encoded."""
    entity, key = make_tenant(admin)
    with Client(**clients(stack, key)) as client:
        for document_id in ("..", ".", "..."):
            uploaded = client.upload_text(entity, document_id, f"the id {document_id} has {len(document_id)} dots")
            assert uploaded.document_id == document_id
            assert client.get_document(entity, document_id).document_id == document_id
        assert sorted(d.document_id for d in client.iter_documents(entity)) == [".", "..", "..."]


def test_raw_request_answers_errors_as_sent_without_retrying(stack, admin):
    entity, key = make_tenant(admin)
    with Client(**clients(stack, key)) as client:
        missing = client.request("GET", f"/entities/{entity}/documents/nothing-here")
        assert (missing.status, missing.body["error"]) == (404, "not_found")
        assert missing.headers["content-type"].startswith("application/json")
        foreign = client.request("GET", f"/entities/{entity}/documents", headers={"Authorization": "Bearer ei_nope"})
        assert foreign.status == 401
        found = client.request("POST", "/search", service="search", json={"query": "dots", "entity_ids": [entity]})
        assert found.status == 200 and found.body["results"] == []


def test_sync_trajectory_leaves_out_what_it_returned_and_keeps_novelty(stack, admin):
    entity, key = make_tenant(admin)
    with Client(**clients(stack, key)) as client:
        upload_facts(client, entity)
        t = client.trajectory()
        assert t.novelty == {"chunks": 1.0, "documents": 1.0} and t.steps == 0
        first = t.search("ship maintenance schedule", entity_ids=[entity], k=1)
        second = t.search("ship maintenance schedule", entity_ids=[entity], k=1)
        assert first.trajectory.step == 1 and t.steps == 2 and t.tokens == second.trajectory.tokens["total"] > 0
        assert first.results[0].chunk_id != second.results[0].chunk_id
        assert t.novelty == {"chunks": 0.0, "documents": 0.0}  # the plain answer is the first step's chunk
        wider = t.expand(first.results[0].chunk_id, "similar", k=5)
        returned = {first.results[0].chunk_id, second.results[0].chunk_id}
        assert [r.chunk_id for r in wider.results] and returned.isdisjoint(r.chunk_id for r in wider.results)
        assert wider.count == 1 and t.steps == 3  # three facts: one is left
        grounding = t.grounding()
        assert [q["query"] for q in grounding.queries][:2] == ["ship maintenance schedule"] * 2
        assert {c["chunk_id"] for c in grounding.chunks} == returned | {wider.results[0].chunk_id}
        assert t.delete()
        with pytest.raises(NotFoundError) as err:
            t.grounding()
        assert err.value.field == "trajectory"
        with pytest.raises(BadRequestError) as bad:
            client.trajectory("not an id").search("x", entity_ids=[entity])
        assert bad.value.field == "trajectory"


async def test_async_trajectory_claims_its_id_and_steps(stack, admin):
    entity, key = make_tenant(admin)
    async with AsyncClient(**clients(stack, key)) as client:
        await client.upload_text(entity, "pumps", FACTS["pumps"])
        await client.wait_ready(entity, "pumps", timeout=120)
        t = await client.trajectory(unique("t-")).create()
        answer = await t.search("bilge pump", entity_ids=[entity], k=3)
        assert answer.trajectory.id == t.id and t.steps == 1 and [r.document_id for r in answer.results] == ["pumps"]
        again = await t.search("bilge pump", entity_ids=[entity], k=3)
        assert again.results == [] and t.novelty["chunks"] == 0.0
        with pytest.raises(ConflictError):
            await client.trajectory(t.id).create()
