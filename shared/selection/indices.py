"""Index selection: which of a tenant's indices should a request search?

An index is a collection of the tenant's own documents (its profile kept by ingestion,
see collections.py) or an index that lives elsewhere, registered as a descriptor alone
(name, description, fields). ``POST /indices/select`` ranks them with the same hybrid
scoring as tools and says what matched and whether the first choice is confident.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from .. import sqlfiles, validation
from ..errors import Conflict, NotFound, ValidationError
from . import field_vectors as fv
from .catalog_cache import CatalogCache, as_vector, bump, check_model, model_ids, serving_guard
from .definitions import parse_named
from .overlap import overlapped
from .scoring import Catalogue, z_cut, zscore
from .text import Field, split_identifier, terms
from .text import query_terms as query_terms_of

SQL = sqlfiles.load("tools.sql")
COLLECTION_SQL = sqlfiles.load("collections.sql")
KIND = "indices"
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$")
MAX_PER_REQUEST = 2000
MAX_PER_ENTITY = 10000
MAX_FIELDS = 2000
DEFAULT_K = 5
MAX_K = 50
CONFIDENT_Z = 5.0       # fused z of the first choice (scoring.py; cross-validated, see COVER_WEIGHT) ...
CONFIDENT_MARGIN = 0.5  # ... and its lead over the second, in z units
# A descriptor with qualified fields ("table.column") is also scored by its best part (table):
# a question is usually about one or two tables, which a whole database's text dilutes.
PART_WEIGHT = 0.7
# Descriptors named in one namespace ("db.table", "cluster.index") are usually searched together
# (a join, a shared schema): each gains this share of the best score of its namespace.
GROUP_BOOST = 1.0
# A word a question shares with one index's name (the "reviews" of "the people who review", the "payments"
# of a question about refunds) is a lure when the index holds nothing else the question asks for: each
# descriptor also gains COVER_WEIGHT z units per z of how many of the question's distinct terms it holds
# (text.BM25Index.coverage), so the index whose fields answer the question outweighs a single shared word.
# Chosen by leave-one-catalogue-out cross-validation (scripts/tune_select.py, docs/benchmarks.md): Spider's
# databases and tables tie between 0 and 0.25, and a tie goes to the smaller value, so it is off.
COVER_WEIGHT = 0.0
SMALL_CATALOGUE = 20
CLOSEST_FIELDS = 3      # fields shown as evidence of the field-vector score
_cache = CatalogCache(KIND)


@dataclass(frozen=True)
class IndexDef:
    name: str
    description: str
    fields: tuple[str, ...]
    kind: str = "external"
    profile: dict | None = None

    def embedded_text(self) -> str:
        words = " ".join(split_identifier(self.name))
        fields = ", ".join(" ".join(split_identifier(f)) for f in self.fields)
        profile = self.profile or {}
        extra = " ".join(profile.get("terms", [])[:30])
        summary = profile.get("summary", "")
        return f"{words}: {self.description} {summary} Fields: {fields} {extra}".strip()


def parts(index: IndexDef) -> dict[str, list[str]]:
    """``{"table": [columns]}`` when the fields are qualified with at least two prefixes, else {}."""
    if index.kind == "collection":   # its fields are JSON paths ("customer.email"), not tables
        return {}
    found: dict[str, list[str]] = {}
    for f in index.fields:
        if "." in f:
            prefix, column = f.split(".", 1)
            found.setdefault(prefix, []).append(column)
        else:
            found.setdefault(f, [])
    return found if sum(1 for f in index.fields if "." in f) and len(found) >= 2 else {}


# What a part's vector and its BM25 fields are made of: the part's own words, not its descriptor's name.
# Near-duplicate schemas (two flight databases, each with airports and airlines) are told apart by which
# of a question's words one table holds together ("airlines" with "flights" in a table ``flights`` with a
# column ``airline``); the descriptor's name repeated in every part would make each of its tables hold the
# name's word too (``flight_4.airlines`` would "hold" flight and airline). The name counts once, in the
# descriptor's own score. Spider databases, tuning half: top1 0.8216 with the name in every part, 0.8631 without.
PART_TEXT_VERSION = 2


def part_text(part: str, fields: list[str]) -> str:
    return f"{' '.join(split_identifier(part))}: Fields: " + ", ".join(" ".join(split_identifier(f)) for f in fields)


def field_plan(index: IndexDef) -> list[fv.FieldText]:
    """The fields embedded one by one (field_vectors.py), with the part each belongs to. A collection's
    fields are its JSON documents' field paths ("customer.email"), kept current by ingestion (collections.py)."""
    return fv.field_texts(index.name, index.fields, set(parts(index)))


def content_hash(index: IndexDef, model_id: str) -> str:
    payload = {"model": model_id, "name": index.name, "kind": index.kind, "description": index.description,
               "fields": list(index.fields), "profile": index.profile or {}}
    if parts(index):   # a descriptor with parts is embedded again when their text changes (PART_TEXT_VERSION)
        payload["part_text"] = PART_TEXT_VERSION
    if field_plan(index):   # ... and one with field vectors when how they are made changes
        payload["field_text"] = fv.FIELD_TEXT_VERSION
    return validation.content_hash(json.dumps(payload, sort_keys=True))


def parse_index(raw: Any, where: str) -> IndexDef:
    if not isinstance(raw, dict):
        raise ValidationError(f"{where} must be an object with name, description and fields", field=where)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.match(name.strip()):
        raise ValidationError(f"{where}.name must be 1-128 letters, digits or _ . : -", field=f"{where}.name")
    description = raw.get("description") or ""
    if not isinstance(description, str) or len(description) > 8000:
        raise ValidationError(f"{where}.description must be a string of at most 8000 characters",
                              field=f"{where}.description")
    fields: list[str] = []
    for key in ("fields", "tables"):    # a database-level descriptor may list its tables too
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
            raise ValidationError(f"{where}.{key} must be a list of strings", field=f"{where}.{key}")
        fields.extend(value)
    if len(fields) > MAX_FIELDS:
        raise ValidationError(f"{where}.fields holds more than {MAX_FIELDS} names", field=f"{where}.fields")
    return IndexDef(name.strip(), description.strip(), tuple(dict.fromkeys(fields)))


async def register(db, embedder, entity_id: str, body: dict) -> dict:
    items = body.get("indices")
    if not isinstance(items, list) or not items:
        raise ValidationError("indices must be a non-empty list of index descriptors", field="indices")
    if len(items) > MAX_PER_REQUEST:
        raise ValidationError(f"indices: at most {MAX_PER_REQUEST} per request", field="indices")
    parsed = parse_named(items, "indices", parse_index)
    seen = {d.name: i for i, d in enumerate(parsed)}
    taken = {r["name"] for r in await db.fetch(COLLECTION_SQL["names_taken"], {"entity_id": entity_id,
                                                                              "names": list(seen)})}
    if taken:
        name = min(taken, key=seen.__getitem__)
        raise Conflict(f"indices.{seen[name]}.name: {name!r} is a collection of this entity's documents",
                       field=f"indices.{seen[name]}.name")
    existing = {r["name"]: r["content_hash"] for r in await db.fetch(SQL["index_hashes"], {"entity_id": entity_id})}
    _check_limit(len(set(existing) | set(seen)))
    written = await upsert(db, embedder, entity_id, parsed, existing)
    return {"entity_id": entity_id, "registered": len(parsed), "embedded": written,
            "unchanged": len(parsed) - written, "model_id": embedder.model_id}


def _check_limit(total: int) -> None:
    if total > MAX_PER_ENTITY:
        raise ValidationError(f"an entity holds at most {MAX_PER_ENTITY} indices", field="indices")


async def upsert(db, embedder, entity_id: str, parsed: list[IndexDef], existing: dict[str, str]) -> int:
    hashes = {d.name: content_hash(d, embedder.model_id) for d in parsed}
    changed = [d for d in parsed if existing.get(d.name) != hashes[d.name]]
    if not changed:
        return 0
    vectors = await embedder.embed([d.embedded_text() for d in changed])
    part_rows = [(d.name, part, fields) for d in changed for part, fields in parts(d).items()]
    part_vectors = await embedder.embed([part_text(p, f) for _, p, f in part_rows]) if part_rows else []
    plans = [[f.text for f in field_plan(d)] for d in changed]
    flat = [text for plan in plans for text in plan]
    field_matrix = await embedder.embed(flat) if flat else np.zeros((0, 0), np.float32)
    bounds = np.cumsum([0] + [len(plan) for plan in plans])
    async with db.transaction() as conn:
        await serving_guard(conn, embedder.model_id, "these indices")
        # the limit again under the entity's registry lock: a concurrent registration may have added some
        await conn.execute(SQL["registry_lock"], {"kind": KIND, "entity_id": entity_id})
        others = (await (await conn.execute(SQL["index_count_others"], {
            "entity_id": entity_id, "names": [d.name for d in parsed]})).fetchone())["n"]
        _check_limit(others + len(parsed))
        for n, (d, vector) in enumerate(zip(changed, vectors)):
            own = field_matrix[bounds[n]:bounds[n + 1]]
            await conn.execute(SQL["index_upsert"], {
                "entity_id": entity_id, "name": d.name, "kind": d.kind, "description": d.description,
                "fields": list(d.fields), "profile": Jsonb(d.profile or {}), "content_hash": hashes[d.name],
                "model_id": embedder.model_id, "embedding": vector,
                "field_vectors": fv.pack(own) if len(own) else None})
            await conn.execute(SQL["index_parts_drop"], {"entity_id": entity_id, "name": d.name})
        for (name, part, fields), vector in zip(part_rows, part_vectors):
            await conn.execute(SQL["index_part_insert"], {"entity_id": entity_id, "name": name, "part": part,
                                                          "fields": fields, "model_id": embedder.model_id,
                                                          "embedding": vector})
        await bump(conn, entity_id, KIND)
    return len(changed)


async def list_indices(db, entity_id: str) -> dict:
    rows = await db.fetch(SQL["index_list"], {"entity_id": entity_id})
    return {"entity_id": entity_id, "count": len(rows), "indices": rows}


async def delete_indices(db, entity_id: str, names: list[str]) -> dict:
    async with db.transaction() as conn:
        cur = await conn.execute(SQL["index_delete"], {"entity_id": entity_id, "names": names})
        deleted = [r["name"] for r in await cur.fetchall()]
        if deleted:
            await bump(conn, entity_id, KIND)
    if len(names) == 1 and not deleted:
        raise NotFound(f"no index {names[0]!r} for entity {entity_id!r}", field="name")
    return {"entity_id": entity_id, "deleted": deleted}


# -- select ------------------------------------------------------------------------------------

@dataclass
class IndexCatalogue:
    catalogue: Catalogue
    parts: Catalogue                 # one entry per part; a descriptor without parts is its own part
    part_owner: np.ndarray           # part -> descriptor
    part_names: list[str]
    groups: np.ndarray | None        # descriptor -> namespace number, when some namespace holds two or more
    rows: list[dict]
    field_terms: list[list[tuple[str, frozenset[str]]]]
    name_terms: list[frozenset[str]]
    description_terms: list[frozenset[str]]
    # every embedded field of every descriptor (field_vectors.py): its vector, descriptor and part
    field_matrix: np.ndarray | None = None
    field_owner: np.ndarray | None = None
    field_part: np.ndarray | None = None
    field_names: list[str] = field(default_factory=list)
    model_ids: frozenset[str] = frozenset()   # the models the descriptors were embedded with


def _fields(row: dict) -> list[Field]:
    profile = row["profile"] or {}
    return [Field(" ".join(split_identifier(row["name"])), 3.0),
            Field(row["description"] or "", 1.0),
            Field(" ".join(" ".join(split_identifier(f)) for f in row["fields"]), 1.0),
            Field(" ".join([*profile.get("terms", []), *profile.get("tags", []), profile.get("summary", "")]), 0.5)]


async def _build(db, entity_ids: list[str]) -> IndexCatalogue:
    return assemble([(entity_id, await db.fetch(SQL["index_catalog"], {"entity_id": entity_id}),
                      await db.fetch(SQL["index_part_catalog"], {"entity_id": entity_id})) for entity_id in entity_ids])


def assemble(read: list[tuple[str, list[dict], list[dict]]]) -> IndexCatalogue:
    """The in-memory catalogue of ``(entity id, its descriptor rows, its part rows)`` as the registry stores
    them; the tuning script builds one the same way."""
    rows, vectors = [], []
    part_keys, part_vectors, part_fields, part_owner, part_names = [], [], [], [], []
    for entity_id, descriptor_rows, part_rows in read:
        offset = len(rows)
        for r in descriptor_rows:
            r["entity_id"] = entity_id
            vectors.append(as_vector(r.pop("embedding")))
            rows.append(r)
        local = {r["name"]: offset + i for i, r in enumerate(rows[offset:])}
        with_parts = set()
        for p in part_rows:
            owner = local.get(p["index_name"])
            if owner is None:
                continue
            with_parts.add(owner)
            part_keys.append((entity_id, f"{p['index_name']}.{p['part']}"))
            part_vectors.append(as_vector(p["embedding"]))
            part_fields.append([Field(" ".join(split_identifier(p["part"])), 3.0),   # see part_text
                                Field(" ".join(" ".join(split_identifier(f)) for f in p["fields"]), 1.0)])
            part_owner.append(owner)
            part_names.append(p["part"])
        for i in range(offset, len(rows)):
            if i not in with_parts:    # its own single part
                part_keys.append((entity_id, rows[i]["name"]))
                part_vectors.append(vectors[i])
                part_fields.append(_fields(rows[i]))
                part_owner.append(i)
                part_names.append("")
    keys = [(r["entity_id"], r["name"]) for r in rows]
    matrix = np.vstack(vectors) if vectors else np.zeros((0, 1), np.float32)
    part_of = {(o, name): j for j, (o, name) in enumerate(zip(part_owner, part_names))}
    field_blocks, field_owner, field_part, field_names = [], [], [], []
    for i, r in enumerate(rows):
        plan = field_plan(IndexDef(r["name"], r["description"] or "", tuple(r["fields"]), r["kind"]))
        block = fv.unpack(r.pop("field_vectors", None), len(plan), matrix.shape[1])
        if block is None:
            continue
        field_blocks.append(block)
        field_owner.extend([i] * len(plan))
        field_part.extend(part_of.get((i, f.part or ""), -1) for f in plan)
        field_names.extend(f.field for f in plan)
    namespaces = [(r["entity_id"], r["name"].rsplit(".", 1)[0]) if "." in r["name"] else (r["entity_id"], r["name"])
                  for r in rows]
    numbering = {ns: i for i, ns in enumerate(dict.fromkeys(namespaces))}
    groups = np.asarray([numbering[ns] for ns in namespaces], dtype=np.int64)
    shared = len(numbering) < len(rows)
    whole = Catalogue(keys, matrix, [_fields(r) for r in rows])
    schemes = whole.bm25.schemes   # each descriptor's language (text.py): its evidence is in its terms
    return IndexCatalogue(
        whole,
        Catalogue(part_keys, np.vstack(part_vectors) if part_vectors else np.zeros((0, 1), np.float32), part_fields),
        np.asarray(part_owner, dtype=np.int64), part_names, groups if shared else None, rows,
        [[(f, frozenset(terms(" ".join(split_identifier(f)), s))) for f in r["fields"]] for r, s in zip(rows, schemes)],
        [frozenset(terms(" ".join(split_identifier(r["name"])), s)) for r, s in zip(rows, schemes)],
        [frozenset(terms(r["description"] or "", s)) for r, s in zip(rows, schemes)],
        np.vstack(field_blocks) if field_blocks else None,
        np.asarray(field_owner, dtype=np.int64), np.asarray(field_part, dtype=np.int64), field_names,
        model_ids(rows))


def field_scores(cat: IndexCatalogue, vector: np.ndarray, own: np.ndarray, own_parts: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Each descriptor's and each part's closeness through its fields (field_vectors.py), and every
    field's cosine. One without field vectors (a collection, a row stored before them) stands for its
    own single field: its own cosine."""
    descriptors, parts_ = own.astype(np.float32), own_parts.astype(np.float32)
    if cat.field_matrix is None:
        return descriptors, parts_, None
    cosines = fv.matvec(cat.field_matrix, vector.astype(np.float32))
    mean, has = fv.top_mean(cosines, cat.field_owner, len(descriptors), fv.FIELD_TOP)
    descriptors = np.where(has, mean, descriptors)
    in_part = cat.field_part >= 0
    mean, has = fv.top_mean(cosines[in_part], cat.field_part[in_part], len(parts_), fv.PART_FIELD_TOP)
    return descriptors, np.where(has, mean, parts_).astype(np.float32), cosines


def _closest_fields(cat: IndexCatalogue, cosines: np.ndarray | None, index: int) -> list[str]:
    """The descriptor's fields closest to the request (evidence of the field-vector score)."""
    if cosines is None:
        return []
    start, end = np.searchsorted(cat.field_owner, [index, index + 1])   # fields are stored by descriptor
    if start == end:
        return []
    best = start + np.argsort(-cosines[start:end], kind="stable")[:CLOSEST_FIELDS]
    return [cat.field_names[j] for j in best]


def _best_part(cat: IndexCatalogue, fused: np.ndarray, index: int) -> dict:
    mine = np.flatnonzero(cat.part_owner == index)
    if len(mine) < 2:
        return {}
    best = int(mine[np.argmax(fused[mine])])
    return {"part": cat.part_names[best]}


@dataclass
class Ranked:
    """A request's scores over an index catalogue (rank): ``final`` orders the descriptors."""
    final: np.ndarray
    scores: Any                  # the descriptors' own (scoring.Scores)
    part_scores: Any
    part_final: np.ndarray
    field_cosines: np.ndarray | None
    part_owner: np.ndarray       # part -> descriptor (the catalogue's)


def rank(cat: IndexCatalogue, query: str, vector: np.ndarray, *, cover_weight: float | None = None) -> Ranked:
    """Every descriptor's final score: its best part, its own hybrid score, its closest fields and how many
    of the question's terms it holds (COVER_WEIGHT), in z units, then its namespace's best (GROUP_BOOST)."""
    scores = cat.catalogue.score(query, vector)
    part_scores = cat.parts.score(query, vector)
    descriptor_fields, part_fields, field_cosines = field_scores(cat, vector, scores.vector, part_scores.vector)
    part_final = zscore(part_scores.fused) + fv.PART_FIELD_WEIGHT * zscore(part_fields)
    n = cat.catalogue.size
    best_part = np.full(n, -np.inf, dtype=np.float32)
    np.maximum.at(best_part, cat.part_owner, part_final)
    final = (PART_WEIGHT * zscore(best_part) + (1 - PART_WEIGHT) * zscore(scores.fused)
             + fv.FIELD_WEIGHT * zscore(descriptor_fields))
    weight = COVER_WEIGHT if cover_weight is None else cover_weight
    if weight:
        final = final + weight * zscore(cat.catalogue.bm25.coverage(query))
    if cat.groups is not None:
        group_best = np.full(int(cat.groups.max()) + 1, -np.inf, dtype=np.float32)
        np.maximum.at(group_best, cat.groups, final)
        final = final + GROUP_BOOST * group_best[cat.groups]
        final = zscore(final)
    return Ranked(final, scores, part_scores, part_final, field_cosines, cat.part_owner)


def is_confident(ranked: Ranked, order: list[int], n: int, *, cut: float | None = None,
                 margin_cut: float | None = None) -> tuple[bool, float]:
    """Whether the first choice is confident (its z and its lead over the second), and that lead."""
    final = ranked.final
    top = float(final[order[0]])
    margin = top - float(final[order[1]]) if len(order) > 1 else float("inf")
    confident = top >= z_cut(CONFIDENT_Z if cut is None else cut, n) and \
        margin >= z_cut(CONFIDENT_MARGIN if margin_cut is None else margin_cut, n, 0.25)
    if n < SMALL_CATALOGUE:
        # among a handful of indices one always stands out in z: ask for a word of the request too
        own_word = ranked.scores.text[order[0]] > 0
        part_word = ranked.part_scores.text[ranked.part_owner == order[0]].max(initial=0) > 0
        confident = confident and bool(own_word or part_word)
    return confident, margin


async def catalogue_for(db, entity_ids: list[str]) -> IndexCatalogue:
    return await _cache.get(db, entity_ids, _build)


@dataclass(frozen=True)
class SelectRequest:
    query: str
    entity_ids: list[str] | None
    k: int


LLM_SYSTEM = ("You pick the index that answers a request. Reply with the exact name of one index from the "
              "list and nothing else.")


async def llm_decide(llm, query: str, shortlist: list[dict], rows_by_name: dict[str, dict]) -> str | None:
    """The name an LLM picks from the shortlist, or None when its answer names none of them."""
    lines = []
    for item in shortlist:
        row = rows_by_name[item["name"]]
        fields = ", ".join(row["fields"][:40])
        lines.append(f"- {item['name']}: {row['description'] or '(no description)'} Fields: {fields}")
    answer = await llm.complete(LLM_SYSTEM, f"Request: {query}\n\nIndices:\n" + "\n".join(lines), max_tokens=40)
    answer = answer.strip().strip("`'\". ")
    names = [item["name"] for item in shortlist]
    return answer if answer in names else None


async def select(db, embedder, entity_ids: list[str], request: SelectRequest, *, llm=None,
                 vector: np.ndarray | None = None) -> dict:
    """``vector``: the query's embedding when the caller has it already (search's ``collections: "auto"``)."""
    started = time.perf_counter()
    # the model runs while the catalogue is read (overlap.py); an empty registry does not wait for it
    async with overlapped(embedder.embed_query(request.query) if vector is None else None) as embedding:
        cat = await catalogue_for(db, entity_ids)
        if cat.catalogue.size and vector is None:
            vector = await embedding.result()
    n = cat.catalogue.size
    await check_model(db, cat.model_ids, embedder.model_id, "indices")
    if n == 0:
        return {"query": request.query, "indices": [], "count": 0, "confident": False, "registry_size": 0,
                "took_ms": round((time.perf_counter() - started) * 1000, 2)}
    ranked = rank(cat, request.query, vector)
    final, scores, part_final = ranked.final, ranked.scores, ranked.part_final
    order = [int(i) for i in np.argsort(-final, kind="stable")[:request.k]]
    confident, margin = is_confident(ranked, order, n)
    out = []
    for i in order:
        row = cat.rows[i]
        query_terms = frozenset(query_terms_of(request.query, cat.catalogue.bm25.schemes[i]))
        out.append({"name": row["name"], "entity_id": row["entity_id"], "kind": row["kind"],
                    "description": row["description"], "score": round(float(final[i]), 4),
                    "scores": {"vector": round(float(scores.vector[i]), 4), "text": round(float(scores.text[i]), 4)},
                    "evidence": {"name": sorted(query_terms & cat.name_terms[i]),
                                 "fields": [f for f, t in cat.field_terms[i] if t & query_terms][:20],
                                 "description": sorted(query_terms & cat.description_terms[i]),
                                 "closest_fields": _closest_fields(cat, ranked.field_cosines, i),
                                 **_best_part(cat, part_final, i)}})
    decided_by = "scores"
    if llm is not None and not confident and len(out) > 1:
        # only the uncertain cases pay for an LLM call, and only over the shortlist
        choice = await llm_decide(llm, request.query, out, {r["name"]: r for r in cat.rows})
        if choice is not None:
            out.sort(key=lambda item: item["name"] != choice)
            decided_by = "llm"
    return {"query": request.query, "entity_ids": entity_ids, "indices": out, "count": len(out),
            "confident": confident, "decided_by": decided_by, "margin": round(margin, 4) if margin != float("inf") else None,
            "registry_size": n, "took_ms": round((time.perf_counter() - started) * 1000, 2)}
