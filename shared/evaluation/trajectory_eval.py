"""``edgeindex eval --trajectory STEPS``: what an agent that searches several times gains from a trajectory.

For every judged query the agent's steps are the query, then the query with pseudo-relevance-feedback
terms (the terms that stand out in the first step's passages against the corpus: a block of
``PRF_TERMS`` new terms per step). The same steps run twice through ``POST /search`` with k results
each: as independent searches (what every other engine offers) and as steps of one trajectory (each
leaving out what the ones before returned, copies included). After each step the benchmark counts,
per query, the judged-relevant documents found, the unique relevant chunks (distinct chunks of
relevant documents, copies of one text counted once) and the tokens of all text returned.

A control runs on the same queries: the query itself again as every step, where nothing is new by
construction, so the trajectory's novelty after the first step must be 0.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..token_count import count_tokens
from .beir import Dataset
from .runner import Options, loaded_entity
from .stack import Endpoints

PRF_TERMS = 5         # new terms per reformulation
PRF_PASSAGES = 5      # first-step passages the terms come from
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def terms(text: str) -> list[str]:
    """Lower-cased words of three letters or more, not numbers; runs of CJK characters as bigrams."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            out.extend(word[i:i + 2] for i in range(len(word) - 1))
        elif len(word) >= 3 and not word.isdigit():
            out.append(word)
    return out


class Reformulator:
    """PRF terms against the corpus's document frequencies."""

    def __init__(self, corpus_texts: list[str]) -> None:
        self.documents = len(corpus_texts)
        self.df = Counter(t for text in corpus_texts for t in set(terms(text)))

    def expansion_terms(self, query: str, passages: list[str], count: int) -> list[str]:
        asked = set(terms(query))
        weights: dict[str, float] = {}
        for text in passages[:PRF_PASSAGES]:
            for term, tf in Counter(terms(text)).items():
                df = self.df.get(term, 0)
                if term in asked or df < 2:  # a term of one document is its name, not the topic's
                    continue
                weights[term] = weights.get(term, 0.0) + (1 + math.log(tf)) * math.log(self.documents / df)
        return sorted(weights, key=lambda t: (-weights[t], t))[:count]

    def steps(self, query: str, first_passages: list[str], steps: int) -> list[str]:
        extra = self.expansion_terms(query, first_passages, PRF_TERMS * (steps - 1))
        return [query] + [" ".join([query, *extra[i * PRF_TERMS:(i + 1) * PRF_TERMS]]).strip()
                          for i in range(steps - 1)]


@dataclass
class Tally:
    """What one way of searching has returned for one query, step by step."""

    documents: set[str] = field(default_factory=set)
    chunks: set[str] = field(default_factory=set)            # relevant chunks, one per distinct text
    tokens: int = 0
    per_step: list[dict] = field(default_factory=list)

    def add(self, results: list[dict], relevant: set[str], novelty: dict | None) -> None:
        for r in results:
            self.tokens += count_tokens(r.get("text") or "")
            if r["document_id"] in relevant:
                self.documents.add(r["document_id"])
                self.chunks.add(_copy_key(r.get("text") or r["chunk_id"]))
        self.per_step.append({"relevant_documents": len(self.documents), "relevant_chunks": len(self.chunks),
                              "tokens": self.tokens, "returned": len(results),
                              **({"novelty_chunks": novelty["chunks"], "novelty_documents": novelty["documents"]}
                                 if novelty else {})})


def _copy_key(text: str) -> str:
    return hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()


async def evaluate(dataset: Dataset, endpoints: Endpoints, options: Options, steps: int,
                   progress: Callable[[str], None] = print) -> dict:
    queries = dataset.judged_queries
    reformulator = Reformulator([d.content for d in dataset.corpus.values()])
    load_before = os.getloadavg()
    tallies: dict[str, dict[str, Tally]] = {"independent": {}, "trajectory": {}, "repeat": {}}
    reformulations: dict[str, list[str]] = {}
    async with loaded_entity(dataset, endpoints, options, progress) as (client, entity_id, ingest, _):
        def body(text: str, trajectory: str | None = None) -> dict:
            return {"query": text, "k": options.k, "entity_ids": [entity_id], "cache": False,
                    "include": {"text": True}, **({"trajectory": trajectory} if trajectory else {})}

        progress(f"{len(queries)} queries x {steps} steps: independent searches, a trajectory, and the "
                 "repeated query in a trajectory (the control)")
        for qid, text in queries.items():
            relevant = {d for d, grade in dataset.qrels[qid].items() if grade >= 1}
            first = await client.search_answer(body(text))
            reformulations[qid] = plan = reformulator.steps(text, [r["text"] or "" for r in first["results"]], steps)
            independent = tallies["independent"][qid] = Tally()
            independent.add(first["results"], relevant, None)
            for step_query in plan[1:]:
                independent.add((await client.search_answer(body(step_query)))["results"], relevant, None)
            for way, plan_of in (("trajectory", plan), ("repeat", [text] * steps)):
                trajectory = f"eval-{uuid.uuid4().hex[:12]}"
                tally = tallies[way][qid] = Tally()
                for step_query in plan_of:
                    answer = await client.search_answer(body(step_query, trajectory))
                    tally.add(answer["results"], relevant, answer["trajectory"]["novelty"])

    summary = {way: _summarise(by_query, dataset, steps) for way, by_query in tallies.items()}
    last_i, last_t = summary["independent"][-1], summary["trajectory"][-1]
    return {
        "dataset": {"name": dataset.name, "path": str(dataset.path), "documents": len(dataset.corpus),
                    "judged_queries": len(queries)},
        "config": {"k": options.k, "steps": steps, "prf_terms_per_step": PRF_TERMS, "entity_id": entity_id,
                   "ingest": {"seconds": round(ingest.seconds, 1), "ready": ingest.ready, "chunks": ingest.chunks,
                              "failed": ingest.failed},
                   "machine": {"cpus": os.cpu_count(), "load_average_1m_before": round(load_before[0], 2),
                               "load_average_1m_after": round(os.getloadavg()[0], 2)},
                   "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
        "steps": summary,
        "ratio": {"relevant_chunks": _ratio(last_t["relevant_chunks"], last_i["relevant_chunks"]),
                  "relevant_chunks_per_token": _ratio(last_t["relevant_chunks"] / max(last_t["tokens"], 1),
                                                      last_i["relevant_chunks"] / max(last_i["tokens"], 1)),
                  "recall_documents": _ratio(last_t["recall_documents"], last_i["recall_documents"])},
        "reformulations": reformulations,
        "per_query": {way: {qid: t.per_step for qid, t in by_query.items()} for way, by_query in tallies.items()},
    }


def _summarise(by_query: dict[str, Tally], dataset: Dataset, steps: int) -> list[dict]:
    out = []
    for step in range(steps):
        rows = [(qid, t.per_step[step]) for qid, t in by_query.items()]
        recall = [row["relevant_documents"] / max(1, sum(g >= 1 for g in dataset.qrels[qid].values()))
                  for qid, row in rows]
        entry = {"step": step + 1, "recall_documents": _mean(recall),
                 "relevant_chunks": _mean([row["relevant_chunks"] for _, row in rows]),
                 "tokens": _mean([row["tokens"] for _, row in rows])}
        if rows and "novelty_chunks" in rows[0][1]:
            entry["novelty_chunks"] = _mean([row["novelty_chunks"] for _, row in rows])
        out.append(entry)
    return out


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def format_table(results: dict) -> str:
    header = ["search", "step", "recall docs", "relevant chunks", "tokens", "novelty"]
    rows = [[way, str(s["step"]), f"{s['recall_documents']:.4f}", f"{s['relevant_chunks']:.2f}", f"{s['tokens']:.0f}",
             f"{s['novelty_chunks']:.3f}" if "novelty_chunks" in s else "-"]
            for way, summary in results["steps"].items() for s in summary]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [header, *rows]]
    ratio = results["ratio"]
    lines.append(f"trajectory / independent at step {results['config']['steps']}: relevant chunks "
                 f"{ratio['relevant_chunks']}x, per token {ratio['relevant_chunks_per_token']}x, "
                 f"document recall {ratio['recall_documents']}x")
    return "\n".join(lines)
