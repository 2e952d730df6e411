"""One call between the first pass and retrieval: which enhancements run, and what they change.

``QueryEnhancer.apply`` takes the request, the first (lexical) pass and the query vector, and
returns what retrieval should use instead: a lexical result computed with expansion terms
(PRF, synonyms) and a blended vector (HyDE), with a report of what was done and why not.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import language, sqlfiles
from ...bindings.ai import ChatModel, Embedder
from ...bindings.database import Database
from ...bindings.kv import KV
from ...errors import ValidationError
from .. import engine
from ..request import SearchRequest
from . import defaults, gates
from .llm import LLMEnhancer

SQL = sqlfiles.load("enhance.sql")
OFFLINE = ("prf",)
WITH_LLM = ("synonyms", "hyde")
ALL = OFFLINE + WITH_LLM


@dataclass(frozen=True)
class EnhanceSettings:
    auto_offline: tuple[str, ...] = defaults.AUTO_OFFLINE
    auto_with_llm: tuple[str, ...] = defaults.AUTO_WITH_LLM
    prf_gate_max_top: float = defaults.PRF_GATE_MAX_TOP
    llm_gate_max_top: float = defaults.LLM_GATE_MAX_TOP
    llm_budget: float = defaults.LLM_BUDGET_SECONDS


@dataclass
class Enhancement:
    """What ``apply`` changed (``lexical``/``embedding`` None: unchanged) and its report for the response."""

    lexical: engine.LexicalResult | None = None
    embedding: np.ndarray | None = None
    report: dict[str, Any] = field(default_factory=dict)


class QueryEnhancer:
    def __init__(self, *, db: Database, kv: KV, embedder: Embedder, llm: ChatModel | None = None,
                 settings: EnhanceSettings = EnhanceSettings()) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.llm = LLMEnhancer(llm, kv, budget=settings.llm_budget) if llm is not None else None

    def wanted(self, request: SearchRequest) -> tuple[str, ...]:
        """The enhancements a request asks for ("auto": the deployment's evaluated choice)."""
        if request.enhance == "none":
            return ()
        if request.enhance == "auto":
            return self.settings.auto_with_llm if self.llm is not None else self.settings.auto_offline
        return tuple(request.enhance)

    def check(self, request: SearchRequest) -> None:
        if self.llm is None and isinstance(request.enhance, list):
            missing = [name for name in request.enhance if name in WITH_LLM]
            if missing:
                raise ValidationError(f"{', '.join(missing)} needs an LLM, and none is configured on this "
                                      "deployment (services.ai.llm_model)", field="enhance")

    async def apply(self, request: SearchRequest, entity_ids: list[str], lexical: engine.LexicalResult,
                    embedding: np.ndarray | None, *, limit: int, tuned: engine.TunedConnections) -> Enhancement | None:
        wanted = self.wanted(request)
        if not wanted:
            return None
        mark = time.perf_counter()
        out = Enhancement()
        evidence = gates.evidence(request.query, lexical)
        report: dict[str, Any] = {"applied": [], "skipped": {},
                                  "evidence": {"top": round(evidence.top, 4), "words": evidence.words}}
        use_text = engine.uses_text(request)
        expansion: dict[str, Any] = {}

        llm_wanted = [name for name in wanted if name in WITH_LLM]
        if "synonyms" in llm_wanted and not use_text:
            report["skipped"]["synonyms"] = "no full-text half (alpha 1)"
            llm_wanted.remove("synonyms")
        if "hyde" in llm_wanted and (request.alpha == 0 or embedding is None):
            report["skipped"]["hyde"] = "no vector half (alpha 0)"
            llm_wanted.remove("hyde")
        if llm_wanted:
            reason = gates.llm(evidence, self.settings.llm_gate_max_top)
            if reason is not None:
                for name in llm_wanted:
                    report["skipped"][name] = reason
                llm_wanted = []
        if llm_wanted:
            await self._llm(request, embedding, llm_wanted, out, report, expansion)

        if "prf" in wanted:
            if not use_text:
                report["skipped"]["prf"] = "no full-text half (alpha 1)"
            elif (reason := gates.prf(evidence, self.settings.prf_gate_max_top)) is not None:
                report["skipped"]["prf"] = reason
            else:
                terms = await self._prf_terms(request, entity_ids, lexical)
                if terms:
                    best = terms[0]["score"]
                    expansion.update(
                        expansion_configs=[t["config"] for t in terms], expansion_terms=[t["term"] for t in terms],
                        expansion_weights=[defaults.PRF_WEIGHT * t["score"] / best for t in terms])
                    report["applied"].append("prf")
                    report["terms"] = [t["term"] for t in terms]
                else:
                    report["skipped"]["prf"] = "no expansion term"

        if expansion:
            out.lexical = await engine.lexical(self.db, request, entity_ids, tuned=tuned, limit=limit,
                                               expansion={**engine.NO_EXPANSION, **expansion})
        report["ms"] = round((time.perf_counter() - mark) * 1000, 2)
        out.report = report
        return out

    async def _llm(self, request: SearchRequest, embedding: np.ndarray | None, wanted: list[str],
                   out: Enhancement, report: dict, expansion: dict) -> None:
        calls = {}
        if "synonyms" in wanted:
            calls["synonyms"] = self.llm.synonyms(request.query)
        if "hyde" in wanted:
            calls["hyde"] = self.llm.hypothetical(request.query)
        answers = dict(zip(calls, await asyncio.gather(*calls.values()), strict=True))
        report["llm"] = {}
        if "synonyms" in answers:
            synonyms, answer = answers["synonyms"]
            report["llm"]["synonyms"] = answer.outcome
            if synonyms:
                # parsed with every configuration in scope, as the query is (cut the same way first)
                expansion.update(expansion_text=language.lexical_text(" ".join(synonyms)),
                                 expansion_text_weight=defaults.SYNONYM_WEIGHT)
                report["applied"].append("synonyms")
                report["synonyms"] = synonyms
            else:
                report["skipped"]["synonyms"] = f"LLM {answer.outcome}: no synonyms"
        if "hyde" in answers:
            answer = answers["hyde"]
            report["llm"]["hyde"] = answer.outcome
            if answer.text:
                hypothetical = await self.embedder.embed_query(answer.text)
                blended = (1 - defaults.HYDE_WEIGHT) * embedding + defaults.HYDE_WEIGHT * hypothetical
                out.embedding = (blended / max(float(np.linalg.norm(blended)), 1e-12)).astype(embedding.dtype)
                report["applied"].append("hyde")
            else:
                report["skipped"]["hyde"] = f"LLM {answer.outcome}: no passage"

    async def _prf_terms(self, request: SearchRequest, entity_ids: list[str],
                         lexical: engine.LexicalResult) -> list[dict]:
        order = sorted(range(len(lexical.ids)), key=lambda i: -(lexical.text[i] + lexical.trigram[i]))
        top = order[:defaults.PRF_FEEDBACK_CHUNKS]
        return await self.db.fetch(SQL["prf_terms"], {
            "entity_ids": sorted(set(entity_ids)),
            "feedback_entity_ids": [lexical.entity_ids[i] for i in top],
            "feedback_ids": [lexical.ids[i] for i in top],
            "feedback_weights": [lexical.text[i] + lexical.trigram[i] for i in top],
            "query": language.lexical_text(request.query),
            "min_chars": defaults.PRF_MIN_CHARS, "min_chunks": min(defaults.PRF_MIN_CHUNKS, len(top)),
            "max_df_share": defaults.PRF_MAX_DF_SHARE, "terms": defaults.PRF_TERMS})
