"""Tool registry per entity and ``POST /tools/select``.

Register: definitions are normalised and checked (definitions.py), hashed, and only
those whose embedded text (or model) changed are embedded again; every vector is
stored with its model id. Select: the entities' catalogue is scored whole in memory
(scoring.py), with an exact-name fast path, category expansion, requirement closure,
a cold-start fallback and a token account. Feedback adds bounded learned examples and
a bounded prior.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from .. import sqlfiles
from ..errors import NotFound, ValidationError
from . import definitions
from .aliases import assign as assign_aliases
from .catalog_cache import CatalogCache, as_vector, bump, check_model, model_ids, serving_guard
from .clauses import SENTENCE_BREAK, clause_spans
from .definitions import MAX_TOOLS_PER_ENTITY, ToolDef, count_tokens, parse_catalogue
from .overlap import overlapped
from .scoring import Catalogue, feedback_prior, z_cut
from .scoring import zscore as _zscore
from .text import Field, split_identifier, terms

SQL = sqlfiles.load("tools.sql")
KIND = "tools"
# Feedback bumps its own version: it moves the learned layer (priors, learned examples) of the
# catalogue, which a worker refreshes alone (refresh_learned) without rebuilding the rest.
FEEDBACK_KIND = "tools.feedback"
DEFAULT_K = 5
MAX_K = 50
MAX_QUERY_CHARS = 4000
# Fused z-score (see scoring.py) under which a tool is not sent, and under which the best
# tool does not count as a confident answer. Calibrated with `edgeindex eval --tools` on the
# dev catalogue: needed tools sit far above it (their median z is ~6), while the best
# unrelated tool of a catalogue sits at ~2.5-3.5.
DEFAULT_THRESHOLD = 1.5
CONFIDENT_Z = 3.0          # both cuts are capped for small catalogues (scoring.z_cut)
CATEGORY_MAX = 10
# "nothing confident": the k best and a search tool (search_tool); a registry up to this size is sent whole
# instead only when the caller asks (whole_registry_when_unsure)
FALLBACK_MAX = 64
FEEDBACK_EXAMPLES_PER_TOOL = 20
# A request made of several sentences often asks for several tools ("First ... Then ...").
# Each sentence with enough words of its own is scored alone too; its best tool joins the
# first places when it stands out among the tools (vector z and fused z both >= SEGMENT_Z),
# which keeps filler sentences ("Can you help me with a few things?") from adding noise.
MAX_SEGMENTS = 8
# A sentence is scored alone from six terms (stop words aside). Every sentence scored alone is embedded
# again beside the whole request, which is most of a long request's model time (the tail of select
# latency); shorter ones are mostly constraints on the task ("Round to 3 decimals.", "Don't return full
# text") whose words the whole request's vector and BM25 hold already. Six rather than three keeps tools
# recall@5 and all_needed@5 on both halves of tools-bfcl (within one query) and cuts the bench's
# 99th-percentile request from 78 padded token rows to 48.
SEGMENT_MIN_TERMS = 6
SEGMENT_Z = 3.0
# Coverage (_cover): the whole request's first COVER_LEAD tools, then one tool for each task (sentence or
# clause) whose best is not covered yet, then (TASK_DEPTH 2) each task's second best, then the rest.
# Near-duplicates are tools whose definition vectors have a cosine of DUP_COS or more: one covers a task the
# other is best for, and in a request of several tasks the fill ranks a near-duplicate of a chosen tool
# DUP_PENALTY z lower (MMR), looking among the FILL_POOL best. COVER_LEAD, DUP_COS, DUP_PENALTY, TASK_DEPTH
# and CLAUSE_Z are chosen by leave-one-catalogue-out cross-validation (scripts/tune_select.py, the rule and
# the figures in docs/benchmarks.md): for every held-out catalogue, the values best on the others.
COVER_LEAD = 2
DUP_COS = 1.01            # above 1: no two tools count as near-duplicates (the folds' choice)
DUP_PENALTY = 1.0
FILL_POOL = 20
TASK_DEPTH = 2              # a task's picks: its best (1), or its best and then its second (2)
# A tool's ``p``: the probability that the request needs it, sigmoid(CALIBRATION_A * fused z + CALIBRATION_B),
# fitted by logistic regression on the first ten tools of every request of the four tools-bfcl catalogues
# (scripts/tune_select.py; each catalogue's calibration read with the fit on the other three).
CALIBRATION_A = 1.2036
CALIBRATION_B = -7.1788
# Clauses (clauses.py: "..., and then ...", "... as well as ...") are the tasks inside a sentence. Their
# vectors are pooled from the request's own forward pass (no model time); a clause's best tool is picked
# after the sentences' picks when it stands out by CLAUSE_Z (vector z and fused z), as a sentence's does
# (chosen by cross-validation with the coverage constants above).
CLAUSE_MIN_TERMS = 3
CLAUSE_Z = 3.0
# The tail cut: a request that needs one tool gets it on top, far above the rest, and the k - 1 below it
# are prompt tokens the agent pays for nothing. A tool of the whole request's ranking (a lead or a fill,
# not the best one, nor a sentence's or a clause's pick, a named, category or required tool) is sent only
# when its fused z reaches TAIL_SHARE of the best tool's, unless it stands out by TAIL_KEEP_Z on its own.
# Both are z units (scoring.py), so they do not depend on the model's cosine scale; a weak best tool gives a
# low bar (an unsure answer keeps its k), and in a small catalogue the bar is capped as the threshold is
# (z_cut). Swept on the tuning half of tools-bfcl only.
TAIL_SHARE = 0.4
TAIL_KEEP_Z = 5.0
# An unsure best tool keeps the k: the cut applies only when the best tool also stands out by its vector
# (vector z >= TAIL_SURE_Z, the confidence cut), not by its words alone ("I have 100 euro. How much is it
# in USD?" puts `euro_history.*` on top through BM25, the currency tools, far closer in meaning, under
# the cut). On the tuning half no request's cut depends on it (2.0-3.5 give the same picks).
TAIL_SURE_Z = CONFIDENT_Z
# A one-sentence request this long (~40 tokens) is embedded through embed_queries, which may give it a
# second core; a shorter one goes through the query batcher that concurrent searches share.
LONG_QUERY_CHARS = 160
_SENTENCE = SENTENCE_BREAK   # clauses.py: full-width sentence ends too
_cache = CatalogCache(KIND)


# -- registry ----------------------------------------------------------------------------------

def _example_hash(text: str) -> str:
    return hashlib.sha256(text.strip().lower().encode()).hexdigest()[:32]


async def register(db, embedder, entity_id: str, body: dict) -> dict:
    tools = parse_catalogue(body)
    model_id = embedder.model_id
    existing = {r["name"]: r for r in await db.fetch(SQL["tool_hashes"], {"entity_id": entity_id})}
    _check_limit(len(existing), tools, existing)   # early, before any model time; checked again under the lock
    texts = {t.name: t.embedded_text() for t in tools}
    hashes = {t.name: definitions.content_hash(texts[t.name], model_id) for t in tools}
    unchanged_names = {t.name for t in tools if t.name in existing
                       and existing[t.name]["definition_hash"] == t.definition_hash()
                       and existing[t.name]["content_hash"] == hashes[t.name]}
    keep_names = {t.name for t in tools if t.name in existing and t.name not in unchanged_names
                  and existing[t.name]["content_hash"] == hashes[t.name]}
    unchanged = [t for t in tools if t.name in unchanged_names]
    keep_vector = [t for t in tools if t.name in keep_names]
    to_embed = [t for t in tools if t.name not in unchanged_names and t.name not in keep_names]
    vectors = await embedder.embed([texts[t.name] for t in to_embed]) if to_embed else np.zeros((0, 0))
    described = [t for t in to_embed if t.description]
    description_vectors = dict(zip([t.name for t in described],
                                   await embedder.embed([t.description for t in described]) if described else []))

    known_examples = {(r["name"], r["text_hash"]) for r in await db.fetch(SQL["tool_example_hashes"],
                                                                         {"entity_id": entity_id,
                                                                          "model_id": model_id})}
    new_examples = [(t.name, e) for t in to_embed + keep_vector for e in t.examples
                    if (t.name, _example_hash(e)) not in known_examples]
    example_vectors = await embedder.embed([e for _, e in new_examples]) if new_examples else []

    changed = to_embed + keep_vector
    async with db.transaction() as conn:
        await serving_guard(conn, model_id, "these tools")
        await conn.execute(SQL["registry_lock"], {"kind": KIND, "entity_id": entity_id})
        names = [t.name for t in tools]
        others = (await (await conn.execute(SQL["tool_count_others"], {"entity_id": entity_id, "names": names}))
                  .fetchone())["n"]
        _check_limit(others + len(tools), tools, existing)
        held = {r["name"]: r["alias"] for r in await (await conn.execute(SQL["tool_aliases"],
                                                                           {"entity_id": entity_id})).fetchall()}
        aliases = assign_aliases(names, held)
        for tool, vector in zip(to_embed, vectors):
            await conn.execute(SQL["tool_upsert"], {**_row(entity_id, tool, aliases[tool.name], hashes[tool.name],
                                                         model_id, vector),
                                                    "description_embedding": description_vectors.get(tool.name)})
        for tool in keep_vector:
            row = _row(entity_id, tool, aliases[tool.name], hashes[tool.name], model_id, None)
            await conn.execute(SQL["tool_update_keep_vector"], row)
        for tool in changed:
            await conn.execute(SQL["tool_example_drop_stale"], {
                "entity_id": entity_id, "name": tool.name, "keep": [_example_hash(e) for e in tool.examples]})
        for (name, text), vector in zip(new_examples, example_vectors):
            await conn.execute(SQL["tool_example_insert"], {
                "entity_id": entity_id, "name": name, "text_hash": _example_hash(text), "text": text,
                "source": "definition", "model_id": model_id, "embedding": vector})
        if changed:
            await bump(conn, entity_id, KIND)
    names = set(existing) | {t.name for t in tools}
    unresolved = sorted({r for t in tools for r in t.requires if r not in names})
    return {"entity_id": entity_id, "registered": len(tools), "embedded": len(to_embed),
            "updated_without_embedding": len(keep_vector), "unchanged": len(unchanged),
            "model_id": model_id, "unresolved_requires": unresolved,
            "tools": [{"name": t.name, "alias": aliases[t.name], "status": "unchanged" if t.name in unchanged_names else
                       "updated" if t.name in keep_names else "embedded"} for t in tools]}


def _check_limit(total: int, tools: list[ToolDef], existing: dict) -> None:
    """``total``: the entity's tools once this registration is stored."""
    if total <= MAX_TOOLS_PER_ENTITY:
        return
    new = sum(t.name not in existing for t in tools)
    raise ValidationError(f"an entity holds at most {MAX_TOOLS_PER_ENTITY} tools: {total - new} registered, "
                          f"{new} new in this request", field="tools")


def _row(entity_id: str, tool: ToolDef, alias: str, content_hash: str, model_id: str, vector) -> dict:
    return {"entity_id": entity_id, "name": tool.name, "alias": alias, "description": tool.description,
            "parameters": Jsonb(tool.parameters), "category": tool.category, "tags": list(tool.tags),
            "requires": list(tool.requires), "examples": list(tool.examples), "content_hash": content_hash,
            "definition_hash": tool.definition_hash(), "tokens": count_tokens({**tool.function(), "name": alias}),
            "model_id": model_id, "embedding": vector}


async def list_tools(db, entity_id: str) -> dict:
    rows = await db.fetch(SQL["tool_list"], {"entity_id": entity_id})
    return {"entity_id": entity_id, "count": len(rows), "tokens": sum(r["tokens"] for r in rows), "tools": rows}


async def delete_tools(db, entity_id: str, names: list[str]) -> dict:
    async with db.transaction() as conn:
        cur = await conn.execute(SQL["tool_delete"], {"entity_id": entity_id, "names": names})
        deleted = [r["name"] for r in await cur.fetchall()]
        if deleted:
            await bump(conn, entity_id, KIND)
    missing = sorted(set(names) - set(deleted))
    if len(names) == 1 and missing:
        raise NotFound(f"no tool {names[0]!r} for entity {entity_id!r}", field="name")
    return {"entity_id": entity_id, "deleted": sorted(deleted), "not_found": missing}


# -- the in-memory catalogue -----------------------------------------------------------------

@dataclass
class ToolCatalogue:
    catalogue: Catalogue
    rows: list[dict]                         # aligned with catalogue.keys
    by_name: dict[tuple[str, str], int]
    categories: dict[tuple[str, str], list[int]]   # (entity, category) -> tools
    category_terms: dict[tuple[str, str], frozenset[str]]
    names_lower: dict[str, list[int]]
    total_tokens: int
    entity_ids: list[str] = field(default_factory=list)
    used: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))    # feedback counts per tool
    shown: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    learned: dict[int, np.ndarray] = field(default_factory=dict)   # tool -> its learned examples' vectors
    refreshed_tools: int = 0   # tools whose learned examples the last refresh re-read
    model_ids: frozenset[str] = frozenset()   # the models the tools were embedded with


# The name's last segment (the whole name when it has no dots) counts again: in `geometry.area_circle`
# or `european_history.get_event_date` the leaf says what the tool does and the namespace says whose
# it is, and a namespace's words are shared by all its siblings and match any request on their topic.
# Tuned on the tuning half of tools-bfcl (a plateau from 3 to 15; 5 is its best).
NAME_LEAF_WEIGHT = 5.0


def _fields(row: dict) -> list[Field]:
    props = (row["parameters"] or {}).get("properties") or {}
    param_desc = " ".join(str(p.get("description", "")) for p in props.values() if isinstance(p, dict))
    # enum values are words a request uses ("in celsius", "a one-way flight") that say which tool fits
    enums = " ".join(str(e) for p in props.values() if isinstance(p, dict)
                     for e in (p.get("enum") if isinstance(p.get("enum"), list) else [])[:50])
    # BM25F weights (edgeindex eval --tools, tuned on the tuning half of the queries only): the name's
    # words count most; parameter names half (generic names such as "limit" or "id" are common)
    return [Field(" ".join(split_identifier(row["name"])), 3.0),
            Field(" ".join(split_identifier(row["name"].rsplit(".", 1)[-1])), NAME_LEAF_WEIGHT),
            Field(row["description"] or "", 1.0),
            Field(" ".join(props), 0.5),
            Field(" ".join(filter(None, [row["category"] or "", *row["tags"]])), 1.0),
            Field(param_desc, 0.3),
            Field(enums, 0.5)]


async def _build(db, entity_ids: list[str]) -> ToolCatalogue:
    read = [(entity_id, await db.fetch(SQL["tool_catalog"], {"entity_id": entity_id}),
             await db.fetch(SQL["tool_example_vectors"], {"entity_id": entity_id})) for entity_id in entity_ids]
    return assemble(read)


def assemble(read: list[tuple[str, list[dict], list[dict]]]) -> ToolCatalogue:
    """The in-memory catalogue of ``(entity id, its tool rows, its example rows)`` as the registry stores
    them (rows with ``embedding`` and ``description_embedding``); the tuning script builds one the same way."""
    rows: list[dict] = []
    vectors: list[np.ndarray] = []
    ex_vectors: list[np.ndarray] = []
    ex_owner: list[int] = []
    learned: dict[int, list[np.ndarray]] = {}
    entity_ids = [entity_id for entity_id, _, _ in read]
    for entity_id, entity_rows, examples in read:
        offset = len(rows)
        local = {r["name"]: offset + i for i, r in enumerate(entity_rows)}
        for r in entity_rows:
            r["entity_id"] = entity_id
            vectors.append(as_vector(r.pop("embedding")))
            view = r.pop("description_embedding", None)
            if view is not None:   # the description alone is one more view of the tool (see 0005)
                ex_vectors.append(as_vector(view))
                ex_owner.append(len(rows))
            rows.append(r)
        for ex in examples:
            if ex["name"] not in local:
                continue
            if ex.get("source") == "feedback":
                learned.setdefault(local[ex["name"]], []).append(as_vector(ex["embedding"]))
            else:
                ex_vectors.append(as_vector(ex["embedding"]))
                ex_owner.append(local[ex["name"]])
    keys = [(r["entity_id"], r["name"]) for r in rows]
    dimension = len(vectors[0]) if vectors else 1
    used = np.asarray([r["used"] for r in rows], np.float32)
    shown = np.asarray([r["shown"] for r in rows], np.float32)
    learned_arrays = {i: np.vstack(v) for i, v in learned.items()}
    catalogue = Catalogue(
        keys, np.vstack(vectors) if vectors else np.zeros((0, dimension), np.float32), [_fields(r) for r in rows],
        example_vectors=np.vstack(ex_vectors) if ex_vectors else None,
        example_owner=np.asarray(ex_owner, dtype=np.int64) if ex_owner else None,
        **_learned_matrix(learned_arrays), prior=feedback_prior(used, shown))
    categories: dict[tuple[str, str], list[int]] = {}
    names_lower: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["category"]:
            categories.setdefault((r["entity_id"], r["category"]), []).append(i)
        names_lower.setdefault(r["name"].lower(), []).append(i)
    return ToolCatalogue(catalogue, rows, {k: i for i, k in enumerate(keys)}, categories,
                         {c: frozenset(terms(c[1])) for c in categories}, names_lower,
                         sum(int(r["tokens"]) for r in rows), list(entity_ids), used, shown, learned_arrays,
                         model_ids=model_ids(rows))


def _learned_matrix(learned: dict[int, np.ndarray]) -> dict:
    owners = [i for i, v in learned.items() for _ in range(len(v))]
    return {"learned_vectors": np.vstack(list(learned.values())) if owners else None,
            "learned_owner": np.asarray(owners, dtype=np.int64) if owners else None}


async def refresh_learned(db, cat: ToolCatalogue) -> ToolCatalogue:
    """The catalogue with the feedback state of now: counts for every tool (one small read), and the
    learned examples of only the tools whose ``used`` count moved (a used feedback is what adds and
    prunes examples). The tools' vectors, BM25 fields and definition examples are shared as they are."""
    used, shown = np.zeros(cat.catalogue.size, np.float32), np.zeros(cat.catalogue.size, np.float32)
    for entity_id in cat.entity_ids:
        for r in await db.fetch(SQL["tool_feedback_counts"], {"entity_id": entity_id}):
            i = cat.by_name.get((entity_id, r["name"]))
            if i is not None:
                used[i], shown[i] = r["used"], r["shown"]
    moved = np.flatnonzero(used != cat.used)
    learned = dict(cat.learned)
    for i in moved:
        learned.pop(int(i), None)
    for entity_id in cat.entity_ids:
        names = [cat.rows[i]["name"] for i in moved if cat.rows[i]["entity_id"] == entity_id]
        if not names:
            continue
        fresh: dict[int, list[np.ndarray]] = {}
        for r in await db.fetch(SQL["tool_learned_vectors"], {"entity_id": entity_id, "names": names}):
            fresh.setdefault(cat.by_name[(entity_id, r["name"])], []).append(as_vector(r["embedding"]))
        learned.update({i: np.vstack(v) for i, v in fresh.items()})
    matrix = _learned_matrix(learned)
    catalogue = cat.catalogue.with_learned(matrix["learned_vectors"], matrix["learned_owner"],
                                           feedback_prior(used, shown))
    return replace(cat, catalogue=catalogue, used=used, shown=shown, learned=learned, refreshed_tools=len(moved))


async def catalogue_state(db, entity_ids: list[str]) -> tuple[ToolCatalogue, str]:
    """The entities' catalogue and how this request got it: "cached", "built" or "refreshed" (feedback)."""
    return await _cache.get_layered(db, entity_ids, _build, refresh_learned, FEEDBACK_KIND)


async def catalogue_for(db, entity_ids: list[str]) -> ToolCatalogue:
    return (await catalogue_state(db, entity_ids))[0]


# -- select ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SelectRequest:
    query: str
    entity_ids: list[str] | None
    k: int
    threshold: float
    threshold_default: bool
    requirements: bool
    categories: bool
    # an unsure answer for a registry of at most FALLBACK_MAX tools: every tool instead of the shortlist
    whole_registry_when_unsure: bool = False
    max_tokens: int | None = None          # a budget for the definitions sent (the first tool always goes)
    exclude: tuple[str, ...] = ()          # names (or aliases) the agent holds already: never sent again
    search_tool: bool | None = None        # None: offered with an unsure answer; True: always; False: never


_IDENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-/]*[A-Za-z0-9_]|[A-Za-z0-9_]")


def named_tools(query: str, cat: ToolCatalogue) -> list[int]:
    """Tools the request names verbatim (the exact-name fast path).

    A compound identifier (``get_weather``, ``math.hypot``, ``getWeather``) counts wherever
    it appears; a plain word (``search``) only when it is the whole request, since a plain
    word in a sentence is usually just a word.
    """
    found: list[int] = []
    whole = query.strip().strip("`'\"").lower()
    for index in cat.names_lower.get(whole, []):
        found.append(index)
    for token in _IDENT.findall(query):
        plain = len(split_identifier(token)) < 2
        if plain:
            continue
        for candidate in (token, token.rstrip(".:-/")):
            for index in cat.names_lower.get(candidate.lower(), []):
                if index not in found:
                    found.append(index)
    return found


def _tool_out(cat: ToolCatalogue, index: int, scores, query_terms: str, reason: str, **extra) -> dict:
    row = cat.rows[index]
    return {"name": row["name"], "alias": row["alias"], "entity_id": row["entity_id"],
            "definition": {"name": row["alias"], "description": row["description"], "parameters": row["parameters"]},
            "category": row["category"], "tags": row["tags"], "requires": row["requires"],
            "score": round(float(scores.fused[index]), 4), "p": calibrated(float(scores.fused[index])),
            "scores": {"vector": round(float(scores.vector[index]), 4), "text": round(float(scores.text[index]), 4),
                       "prior": round(float(cat.catalogue.prior[index]), 4)},
            "reason": reason, "matched_terms": cat.catalogue.bm25.matched(query_terms, index),
            "tokens": int(row["tokens"]), **extra}


@dataclass
class Choice:
    """What ``choose`` made of a request: the tools in the order they are sent, each with why."""
    chosen: dict[int, dict]
    scores: Any
    confident: bool
    fallback: str | None
    threshold: float


async def select(db, embedder, entity_ids: list[str], request: SelectRequest) -> dict:
    started = time.perf_counter()
    timings: dict[str, float] = {}
    parts = segments(request.query)
    parts = parts if len(parts) >= 2 else []
    clauses = clause_spans(request.query, CLAUSE_MIN_TERMS)
    embedded: dict[str, float] = {}
    # the model runs while the catalogue is read (overlap.py); an empty registry does not wait for it
    async with overlapped(embed_texts(embedder, [request.query, *parts], clauses), embedded,
                          "embed_ms") as embedding:
        cat, how = await catalogue_state(db, entity_ids)
        timings["catalogue_ms"] = round((time.perf_counter() - started) * 1000, 2)
        vectors, clause_vectors = await embedding.result() if cat.catalogue.size else (None, [])
    n = cat.catalogue.size
    await check_model(db, cat.model_ids, embedder.model_id, "tools")
    base = {"query": request.query, "entity_ids": entity_ids, "registry_size": n, "model_id": embedder.model_id,
            "catalogue": {"state": how, **({"refreshed_tools": cat.refreshed_tools} if how == "refreshed" else {})}}
    if n == 0:
        return {**base, "tools": [], "count": 0, "confident": False, "fallback": "empty_registry",
                "tokens": _account([], cat), "took_ms": _ms(started)}
    timings["embed_ms"] = embedded["embed_ms"]
    mark = time.perf_counter()
    clause_texts = [request.query[a:b] for (a, b), v in zip(clauses, clause_vectors) if v is not None]
    choice = choose(cat, request, vectors[0], parts, list(vectors[1:]), clause_texts,
                    [v for v in clause_vectors if v is not None])
    timings["score_ms"] = _ms(mark)
    chosen = choice.chosen
    tools = [_tool_out(cat, i, choice.scores, request.query, why.pop("reason"), **why) for i, why in chosen.items()]
    offer = request.search_tool if request.search_tool is not None else \
        choice.fallback == "not_confident_shortlist"
    extra = {"search_tool": search_tool(entity_ids, request, [cat.rows[i]["name"] for i in chosen])} if offer else {}
    tokens = _account(list(chosen), cat, extra["search_tool"]["tokens"] if offer else 0)
    return {**base, "tools": tools, "count": len(tools), "confident": choice.confident, "fallback": choice.fallback,
            "threshold": round(choice.threshold, 4), "tokens": tokens, **extra,
            "timings": timings, "took_ms": _ms(started)}


def choose(cat: ToolCatalogue, request: SelectRequest, query_vector: np.ndarray, parts: list[str],
           part_vectors: list[np.ndarray], clause_texts: list[str], clause_vectors: list[np.ndarray]) -> Choice:
    """The tools a request gets from a catalogue held in memory, given its vectors (the request's, its
    sentences' and its clauses'): no database and no model here (the tuning script calls it as select does)."""
    n = cat.catalogue.size
    scores = cat.catalogue.score(request.query, query_vector)
    held = _excluded(cat, request.exclude)
    order = np.argsort(-scores.fused, kind="stable")
    if held.any():
        order = order[~held[order]]
    threshold = z_cut(request.threshold, n, 0.25) if request.threshold_default else request.threshold
    if not len(order):
        return Choice({}, scores, False, "nothing_left", threshold)
    top_z = float(scores.fused[order[0]])
    named = [i for i in named_tools(request.query, cat) if not held[i]]
    confident = bool(named) or top_z >= z_cut(CONFIDENT_Z, n)
    # the bar of the whole request's ranking: the threshold, raised by the tail cut (a caller's own threshold
    # is taken as it is), and not for a request of several sentences: the cut is for a request of one task, and
    # a second task's tool may rank far below the first's (in catalogues of 20-100 tools cut out from tools-bfcl,
    # the only requests the cut loses are such)
    bar = max(threshold, tail_bar(top_z, float(_zscore(scores.vector)[order[0]]), n)) \
        if request.threshold_default and not parts else threshold
    available = len(order)
    chosen: dict[int, dict] = {}
    fallback = None
    if available <= request.k:
        fallback = "small_registry"      # selection cannot reduce anything: send every tool
        for i in order:
            chosen[int(i)] = {"reason": "fallback"}
    elif not confident and request.whole_registry_when_unsure and available <= FALLBACK_MAX:
        fallback = "not_confident"       # the caller asked: a registry this small fits a prompt whole
        for i in order:
            chosen[int(i)] = {"reason": "fallback"}
    elif not confident:
        # Nothing stands out (small talk, a task no tool does, a word the catalogue lacks): the k best,
        # flagged, and a search tool (search_tool) the agent calls for more in its own words, the
        # deferred loading of Anthropic's tool search and langgraph-bigtool. Sending a whole registry
        # instead costs its every definition on each unsure turn (15 of 40 requests on a 40-tool set).
        # A task that stands out on its own still gets its place in the shortlist (coverage, no bar).
        fallback = "not_confident_shortlist"
        _cover(cat, request, scores, order, -np.inf, held, parts, part_vectors, clause_texts, clause_vectors, chosen)
        for why in chosen.values():
            why["reason"] = "fallback"
    else:
        for i in named:
            chosen[i] = {"reason": "named"}
        _cover(cat, request, scores, order, bar, held, parts, part_vectors, clause_texts, clause_vectors, chosen)
        if request.categories:
            _expand_categories(request.query, cat, chosen, held)
    if request.requirements:
        _close_requirements(cat, chosen)
    if request.max_tokens is not None:
        _within_budget(cat, chosen, request.max_tokens)
    return Choice(chosen, scores, confident, fallback, threshold)


def _excluded(cat: ToolCatalogue, names: tuple[str, ...]) -> np.ndarray:
    held = np.zeros(cat.catalogue.size, bool)
    if names:
        wanted = set(names)
        for i, row in enumerate(cat.rows):
            if row["name"] in wanted or row["alias"] in wanted:
                held[i] = True
    return held


def _cover(cat: ToolCatalogue, request: SelectRequest, scores, order: np.ndarray, bar: float, held: np.ndarray,
           parts: list[str], part_vectors: list[np.ndarray], clause_texts: list[str],
           clause_vectors: list[np.ndarray], chosen: dict[int, dict]) -> None:
    """Coverage before depth. The whole request's best tool (its first COVER_LEAD), then each task's best
    (sentences scored alone, then clauses, most distinct first), then each task's second (TASK_DEPTH 2), then
    the rest of the whole request's ranking above the bar. A task whose best tool is chosen, or is a near-duplicate of a chosen one (definition
    cosine >= DUP_COS), is covered: near-duplicates count as one. In a request of several tasks the fill is
    diversified as MMR does: a near-duplicate of a chosen tool is ranked DUP_PENALTY z lower, so two
    of them do not take the place another task's tool would have."""
    picks = _segment_picks(parts, part_vectors, cat, SEGMENT_Z, held, TASK_DEPTH)
    clause_picks = _segment_picks(clause_texts, clause_vectors, cat, CLAUSE_Z, held, TASK_DEPTH)
    firsts = len({part for _, part in picks}), len({part for _, part in clause_picks})
    # every task's best (sentences', then clauses') before any task's second (TASK_DEPTH)
    ordered = [(i, part, "sentence", n >= firsts[0]) for n, (i, part) in enumerate(picks)] + \
        [(i, part, "clause", n >= firsts[1]) for n, (i, part) in enumerate(clause_picks)]
    ordered.sort(key=lambda pick: pick[3])
    lead = [int(i) for i in order[:COVER_LEAD]]
    vectors = cat.catalogue.vectors
    multi = bool(parts or clause_texts)

    def duplicate_of_chosen(i: int) -> bool:
        if not chosen or DUP_COS > 1:
            return False
        return bool((vectors[list(chosen)] @ vectors[i]).max() >= DUP_COS)

    for i in lead:
        if len(chosen) >= request.k:
            return
        if scores.fused[i] >= bar:
            chosen.setdefault(i, {"reason": "matched"})
    for i, task, key, second in ordered:
        if len(chosen) >= request.k:
            return
        if i in chosen or (not second and duplicate_of_chosen(i)):
            continue   # the task is covered (a task's second is the alternative to its best: kept)
        chosen[i] = {"reason": "matched", key: task}
    diversify = multi and DUP_COS <= 1
    most = FILL_POOL if diversify else request.k
    pool = [i for i in _candidates(order, scores.fused, bar, most + len(chosen))
            if i not in chosen and not scores.fused[i] < bar][:most]
    if not diversify:
        for i in pool[:request.k - len(chosen)]:
            chosen[i] = {"reason": "matched"}
        return
    while pool and len(chosen) < request.k:
        sims = vectors[pool] @ vectors[list(chosen)].T if chosen else np.zeros((len(pool), 1), np.float32)
        value = scores.fused[pool] - DUP_PENALTY * (sims.max(axis=1) >= DUP_COS)
        best = int(np.argmax(value))
        chosen[pool.pop(best)] = {"reason": "matched"}


def calibrated(z: float) -> float:
    """The probability that a tool of fused z ``z`` is needed (CALIBRATION_A, CALIBRATION_B)."""
    return round(1.0 / (1.0 + math.exp(-(CALIBRATION_A * z + CALIBRATION_B))), 4)


def tail_bar(top_z: float, top_vector_z: float, n: int) -> float:
    """The tail cut's bar for a request whose best tool scores ``top_z`` (fused) and ``top_vector_z``
    (vector) among ``n`` tools: none (0) when the best is unsure (see TAIL_SHARE, TAIL_SURE_Z)."""
    if top_vector_z < TAIL_SURE_Z:
        return 0.0
    return min(TAIL_SHARE * top_z, z_cut(TAIL_KEEP_Z, n))


def _candidates(order: np.ndarray, fused: np.ndarray, threshold: float, most: int) -> list[int]:
    """The first ``most`` tools of ``order`` not under the threshold: the fill of _cover reads no further
    (``most`` counts the tools chosen before it, which may be among them). Cut in numpy, not by walking a
    large registry's whole ranking in Python (~0.1-0.4 ms)."""
    return order[~(fused[order] < threshold)][:most].tolist()


def segments(query: str) -> list[str]:
    parts = [p.strip(" \"'") for p in _SENTENCE.split(query)]
    return [p for p in parts if len(terms(p)) >= SEGMENT_MIN_TERMS][:MAX_SEGMENTS]


async def embed_texts(embedder, texts: list[str], clauses: list[tuple[int, int]] = ()
                      ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """The request (and its sentences) in one call where the embedder offers it (a long request alone
    too: such a call may take a second core, see OnnxQueryEncoder.encode_request), and the vectors of the
    request's clauses (character spans of texts[0]) pooled from the same pass where the embedder can (a
    request with clauses only: a plain query goes on sharing the query batcher); else no clause vectors.
    An embedder prepared with the int8 graph for selection (``prepare_select``) takes every text, one a call."""
    select = getattr(embedder, "embed_select", None)
    if select is not None and (done := await select(texts, list(clauses))) is not None:
        vectors, clause_vectors = done
        return list(vectors), clause_vectors
    spans = getattr(embedder, "embed_request_spans", None) if clauses else None
    if spans is not None:
        vectors, clause_vectors = await spans(texts, list(clauses))
        return list(vectors), clause_vectors
    many = getattr(embedder, "embed_queries", None)
    if len(texts) == 1 and (many is None or len(texts[0]) < LONG_QUERY_CHARS):
        return [await embedder.embed_query(texts[0])], []
    if many is not None:
        return list(await many(texts)), []
    return list(await asyncio.gather(*(embedder.embed_query(t) for t in texts))), []


def _segment_picks(parts: list[str], vectors: list[np.ndarray], cat: ToolCatalogue,
                   cut: float = SEGMENT_Z, held: np.ndarray | None = None, depth: int = 1) -> list[tuple[int, str]]:
    """Each part's best tool where it stands out by ``cut`` (vector z and fused z), most distinct first;
    with ``depth`` 2 its second best too where that stands out as well, after every part's best. Tools
    ``held`` (excluded by the request) are never picked."""
    rounds: list[list[tuple[float, int, str]]] = [[] for _ in range(depth)]
    for part, vector in zip(parts, vectors):
        scores = cat.catalogue.score(part, vector)
        fused = scores.fused if held is None or not held.any() else np.where(held, -np.inf, scores.fused)
        vector_z = _zscore(scores.vector)
        ranked = np.argsort(-fused, kind="stable")[:depth] if depth > 1 else [int(np.argmax(fused))]
        for n, best in enumerate(int(i) for i in ranked):
            if not (vector_z[best] >= cut and scores.fused[best] >= cut):
                break
            rounds[n].append((float(vector_z[best]), best, part))
    return [(i, part) for picks in rounds for _, i, part in sorted(picks, key=lambda p: -p[0])]


def _expand_categories(query: str, cat: ToolCatalogue, chosen: dict[int, dict],
                       held: np.ndarray | None = None) -> None:
    """A request naming a category (all of its words) brings that category's tools.

    Only a category of at most CATEGORY_MAX tools: a big one would undo the selection.
    """
    query_terms = set(terms(query))
    for key, members in cat.categories.items():
        words = cat.category_terms[key]
        if not words or not words <= query_terms or len(members) > CATEGORY_MAX:
            continue
        for i in members:
            if held is None or not held[i]:
                chosen.setdefault(i, {"reason": "category", "category": key[1]})


def _close_requirements(cat: ToolCatalogue, chosen: dict[int, dict]) -> None:
    """Every chosen tool comes with the tools it requires, transitively (same entity)."""
    queue = list(chosen)
    while queue:
        i = queue.pop(0)
        row = cat.rows[i]
        for name in row["requires"]:
            j = cat.by_name.get((row["entity_id"], name))
            if j is None or j in chosen:
                continue
            chosen[j] = {"reason": "required", "required_by": row["name"]}
            queue.append(j)


def _within_budget(cat: ToolCatalogue, chosen: dict[int, dict], budget: int) -> None:
    """The tools in their order while their definitions' tokens add up to at most ``budget``; the first
    tool always (a budget smaller than it still gets an answer)."""
    spent = 0
    for n, i in enumerate(list(chosen)):
        spent += int(cat.rows[i]["tokens"])
        if n and spent > budget:
            del chosen[i]


SEARCH_TOOL_NAME = "find_tools"
SEARCH_TOOL = {
    "name": SEARCH_TOOL_NAME,
    "description": "Load more tools when none you have fits a task: give that task in a few words.",
    "parameters": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "description": "one task"},
        "k": {"type": "integer", "description": "tools wanted"}}},
}


@lru_cache(maxsize=1)
def _search_tool_tokens() -> int:
    return count_tokens(SEARCH_TOOL)


def search_tool(entity_ids: list[str], request: SelectRequest, sent: list[str]) -> dict:
    """The search tool an unsure answer offers (deferred loading): its definition for the LLM, its token
    count, and the call it stands for: ``POST /tools/select`` with the LLM's arguments merged into ``body``
    (the same entities, and the tools already sent excluded, so a search for more finds others)."""
    body: dict[str, Any] = {"entity_ids": list(entity_ids), "exclude": sorted({*request.exclude, *sent})}
    return {"definition": SEARCH_TOOL, "tokens": _search_tool_tokens(),
            "call": {"method": "POST", "path": "/tools/select", "service": "search", "body": body},
            "mcp_tool": "find_tools"}


def _account(indices: list[int], cat: ToolCatalogue, extra_tokens: int = 0) -> dict:
    """``extra_tokens``: a definition sent beside the tools (the search tool)."""
    selected = sum(int(cat.rows[i]["tokens"]) for i in indices) + extra_tokens
    total = cat.total_tokens
    return {"selected": selected, "registry": total,
            "reduction": round(1 - selected / total, 4) if total else 0.0, "tokenizer": "cl100k_base"}


def _ms(mark: float) -> float:
    return round((time.perf_counter() - mark) * 1000, 2)


# -- feedback ----------------------------------------------------------------------------------

async def feedback(db, embedder, entity_ids: list[str], body: dict) -> dict:
    """``{query, entity_ids, used: [names], selected?: [names]}``: what the agent actually called.

    Each used tool learns the request as an example (newest FEEDBACK_EXAMPLES_PER_TOOL kept), and
    its used/shown counts move its bounded prior (scoring.feedback_prior).
    """
    query = body.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"query must be a non-empty string of at most {MAX_QUERY_CHARS} characters",
                              field="query")
    used = body.get("used")
    if not isinstance(used, list) or not all(isinstance(u, str) for u in used):
        raise ValidationError("used must be a list of tool names (possibly empty)", field="used")
    selected = body.get("selected", [])
    if not isinstance(selected, list) or not all(isinstance(s, str) for s in selected):
        raise ValidationError("selected must be a list of tool names", field="selected")
    cat = await catalogue_for(db, entity_ids)
    def locate(name: str, where: str) -> tuple[str, str]:
        # the name first; else the alias the agent was given (an LLM calls a tool by its alias)
        hits = [key for key in cat.catalogue.keys if key[1] == name] or \
            [key for key, row in zip(cat.catalogue.keys, cat.rows) if row["alias"] == name]
        if not hits:
            raise ValidationError(f"{where}: no tool {name!r} in entities {', '.join(entity_ids)}", field=where)
        return hits[0]
    used_keys = [locate(u, f"used.{i}") for i, u in enumerate(dict.fromkeys(used))]
    shown_keys = [locate(s, f"selected.{i}") for i, s in enumerate(dict.fromkeys(selected))]
    vector = (await embedder.embed([query.strip()]))[0] if used_keys else None
    text_hash = _example_hash(query)
    async with db.transaction() as conn:
        if vector is not None:
            await serving_guard(conn, embedder.model_id, "the request's vector")
        touched = set()
        for key in dict.fromkeys(used_keys + shown_keys):
            await conn.execute(SQL["tool_feedback_add"], {"entity_id": key[0], "name": key[1],
                                                          "used": int(key in used_keys), "shown": 1})
            touched.add(key[0])
        for entity_id, name in used_keys:
            await conn.execute(SQL["tool_example_insert"], {
                "entity_id": entity_id, "name": name, "text_hash": text_hash, "text": query.strip(),
                "source": "feedback", "model_id": embedder.model_id, "embedding": vector})
            await conn.execute(SQL["tool_example_prune"], {"entity_id": entity_id, "name": name,
                                                           "keep": FEEDBACK_EXAMPLES_PER_TOOL})
        for entity_id in touched:
            await bump(conn, entity_id, FEEDBACK_KIND)   # the learned layer only: no rebuild (refresh_learned)
    return {"embedded": int(vector is not None), "recorded": {"used": [k[1] for k in used_keys], "shown": [k[1] for k in dict.fromkeys(used_keys + shown_keys)]}}
