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
import re
import time
from dataclasses import dataclass, field, replace

import numpy as np
from psycopg.types.json import Jsonb

from .. import sqlfiles
from ..errors import NotFound, ValidationError
from . import definitions
from .aliases import assign as assign_aliases
from .catalog_cache import CatalogCache, as_vector, bump
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
FALLBACK_MAX = 64           # "nothing confident": a registry up to this size is sent whole, a larger one's k best
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
SEGMENT_LEAD = 2            # places the whole request keeps before the sentences' picks
# Clauses (clauses.py: "..., and then ...", "... as well as ...") are the tasks inside a sentence. Their
# vectors are pooled from the request's own forward pass (no model time); a clause's best tool is picked
# after the sentences' picks when it stands out by CLAUSE_Z (vector z and fused z), as a sentence's does.
# Swept on the tuning half of tools-bfcl only.
CLAUSE_MIN_TERMS = 3
CLAUSE_Z = 4.0
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
                                                                         {"entity_id": entity_id})}
    new_examples = [(t.name, e) for t in to_embed + keep_vector for e in t.examples
                    if (t.name, _example_hash(e)) not in known_examples]
    example_vectors = await embedder.embed([e for _, e in new_examples]) if new_examples else []

    changed = to_embed + keep_vector
    async with db.transaction() as conn:
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
    rows: list[dict] = []
    vectors: list[np.ndarray] = []
    ex_vectors: list[np.ndarray] = []
    ex_owner: list[int] = []
    learned: dict[int, list[np.ndarray]] = {}
    for entity_id in entity_ids:
        offset = len(rows)
        entity_rows = await db.fetch(SQL["tool_catalog"], {"entity_id": entity_id})
        local = {r["name"]: offset + i for i, r in enumerate(entity_rows)}
        for r in entity_rows:
            r["entity_id"] = entity_id
            vectors.append(as_vector(r.pop("embedding")))
            view = r.pop("description_embedding")
            if view is not None:   # the description alone is one more view of the tool (see 0005)
                ex_vectors.append(as_vector(view))
                ex_owner.append(len(rows))
            rows.append(r)
        for ex in await db.fetch(SQL["tool_example_vectors"], {"entity_id": entity_id}):
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
                         sum(int(r["tokens"]) for r in rows), list(entity_ids), used, shown, learned_arrays)


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
            "score": round(float(scores.fused[index]), 4),
            "scores": {"vector": round(float(scores.vector[index]), 4), "text": round(float(scores.text[index]), 4),
                       "prior": round(float(cat.catalogue.prior[index]), 4)},
            "reason": reason, "matched_terms": cat.catalogue.bm25.matched(query_terms, index),
            "tokens": int(row["tokens"]), **extra}


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
    base = {"query": request.query, "entity_ids": entity_ids, "registry_size": n, "model_id": embedder.model_id,
            "catalogue": {"state": how, **({"refreshed_tools": cat.refreshed_tools} if how == "refreshed" else {})}}
    if n == 0:
        return {**base, "tools": [], "count": 0, "confident": False, "fallback": "empty_registry",
                "tokens": _account([], cat), "took_ms": _ms(started)}

    query_vector, part_vectors = vectors[0], vectors[1:]
    timings["embed_ms"] = embedded["embed_ms"]
    mark = time.perf_counter()
    scores = cat.catalogue.score(request.query, query_vector)
    order = np.argsort(-scores.fused, kind="stable")
    top_z = float(scores.fused[order[0]])
    named = named_tools(request.query, cat)
    confident = bool(named) or top_z >= z_cut(CONFIDENT_Z, n)
    threshold = z_cut(request.threshold, n, 0.25) if request.threshold_default else request.threshold
    # the bar of the whole request's ranking: the threshold, raised by the tail cut (a caller's own threshold
    # is taken as it is), and not for a request of several sentences: the cut is for a request of one task, and
    # a second task's tool may rank far below the first's (in catalogues of 20-100 tools cut out from tools-bfcl,
    # the only requests the cut loses are such)
    bar = max(threshold, tail_bar(top_z, float(_zscore(scores.vector)[order[0]]), n)) \
        if request.threshold_default and not parts else threshold

    chosen: dict[int, dict] = {}
    fallback = None
    if n <= request.k:
        fallback = "small_registry"      # selection cannot reduce anything: send every tool
        for i in order:
            chosen[int(i)] = {"reason": "fallback"}
    elif not confident and n <= FALLBACK_MAX:
        fallback = "not_confident"       # a registry this small fits a prompt: better every tool than a wrong few
        for i in order:
            chosen[int(i)] = {"reason": "fallback"}
    elif not confident:
        # A large registry cannot be sent whole. A slice of it (say 64 of 1,000 tools, ~10k tokens)
        # holds the right tool a little more often than the best k, at ten times the tokens, for a
        # request that matched nothing confidently (small talk, a task no tool does, a word the
        # catalogue lacks). Tool-search users expect their k best either way (Anthropic's tool
        # search, langgraph-bigtool); the flag tells the agent not to trust them (ask again with a
        # larger k, or answer without a tool).
        fallback = "not_confident_shortlist"
        for i in order[:request.k]:
            chosen[int(i)] = {"reason": "fallback"}
    else:
        for i in named:
            chosen[i] = {"reason": "named"}
        picked = dict(_segment_picks(parts, part_vectors, cat))
        clause_picked = dict(_segment_picks(
            [request.query[a:b] for (a, b), v in zip(clauses, clause_vectors) if v is not None],
            [v for v in clause_vectors if v is not None], cat, CLAUSE_Z))
        lead = [int(i) for i in order[:SEGMENT_LEAD]]
        ranked = lead + list(picked) + list(clause_picked) + _candidates(order, scores.fused, bar, request.k)
        for i in dict.fromkeys(ranked):
            if len(chosen) >= request.k:
                break
            if i in chosen:
                continue
            why = {} if i in lead else {"sentence": picked[i]} if i in picked else \
                {"clause": clause_picked[i]} if i in clause_picked else {}
            if not why and scores.fused[i] < bar:
                continue   # below the bar for the whole request (a sentence's pick passed its own)
            chosen[i] = {"reason": "matched", **why}
        if request.categories:
            _expand_categories(request.query, cat, chosen)
    if request.requirements:
        _close_requirements(cat, chosen)
    timings["score_ms"] = _ms(mark)
    tools = [_tool_out(cat, i, scores, request.query, why.pop("reason"), **why) for i, why in chosen.items()]
    return {**base, "tools": tools, "count": len(tools), "confident": confident, "fallback": fallback,
            "threshold": round(threshold, 4), "tokens": _account(list(chosen), cat),
            "timings": timings, "took_ms": _ms(started)}


def tail_bar(top_z: float, top_vector_z: float, n: int) -> float:
    """The tail cut's bar for a request whose best tool scores ``top_z`` (fused) and ``top_vector_z``
    (vector) among ``n`` tools: none (0) when the best is unsure (see TAIL_SHARE, TAIL_SURE_Z)."""
    if top_vector_z < TAIL_SURE_Z:
        return 0.0
    return min(TAIL_SHARE * top_z, z_cut(TAIL_KEEP_Z, n))


def _candidates(order: np.ndarray, fused: np.ndarray, threshold: float, most: int) -> list[int]:
    """The first ``most`` tools of ``order`` not under the threshold. The choice loop skips every other tool
    of the ranking that it has not met earlier as a lead or a sentence's pick, and ends once it holds k
    tools: each of the first k of these is chosen or already held when the loop reaches it, so it never
    reads further. Cut in numpy, not by walking a large registry's whole ranking in Python (~0.1-0.4 ms)."""
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
                   cut: float = SEGMENT_Z) -> list[tuple[int, str]]:
    """Each part's best tool where it stands out by ``cut`` (vector z and fused z), most distinct first."""
    picks: list[tuple[float, int, str]] = []
    for part, vector in zip(parts, vectors):
        scores = cat.catalogue.score(part, vector)
        best = int(np.argmax(scores.fused))
        vector_z = float(_zscore(scores.vector)[best])
        if vector_z >= cut and scores.fused[best] >= cut:
            picks.append((vector_z, best, part))
    return [(i, part) for _, i, part in sorted(picks, key=lambda p: -p[0])]


def _expand_categories(query: str, cat: ToolCatalogue, chosen: dict[int, dict]) -> None:
    """A request naming a category (all of its words) brings that category's tools.

    Only a category of at most CATEGORY_MAX tools: a big one would undo the selection.
    """
    query_terms = set(terms(query))
    for key, members in cat.categories.items():
        words = cat.category_terms[key]
        if not words or not words <= query_terms or len(members) > CATEGORY_MAX:
            continue
        for i in members:
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


def _account(indices: list[int], cat: ToolCatalogue) -> dict:
    selected = sum(int(cat.rows[i]["tokens"]) for i in indices)
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
