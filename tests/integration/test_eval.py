"""``edgeindex eval`` end to end on a tiny hand-made BEIR folder, against the session stack:
upload worker → ingest queue → workflow → POST /search, plus Chroma over the stored
vectors and BM25, then results.json and the charts."""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from edgeindex.cli import main

from ..helpers import Client

CORPUS = {
    "bake_bread": ("Baking bread", "Knead the dough, let the yeast rise for an hour, then bake the loaf at 220 C "
                   "until the crust is brown and sounds hollow."),
    "sourdough_starter": ("Sourdough starter", "A sourdough starter is flour and water fermented by wild yeast; "
                          "feed it daily to keep the culture active."),
    "tire_change": ("Changing a tire", "Loosen the lug nuts, jack up the car, swap the flat tyre for the spare "
                    "and tighten the nuts in a star pattern."),
    "oil_change": ("Engine oil", "Drain the old engine oil, replace the oil filter and refill with the grade "
                   "your car's manual recommends."),
    "photosynthesis": ("Photosynthesis", "Plants turn sunlight, water and carbon dioxide into glucose and oxygen "
                       "inside their chloroplasts."),
    "mitochondria": ("Mitochondria", "Mitochondria produce most of a cell's ATP through oxidative "
                     "phosphorylation; they are the powerhouse of the cell."),
    "volcano": ("Volcanoes", "Magma rises through the crust and erupts as lava, ash and gas when pressure in "
                "the chamber builds up."),
    "earthquake": ("Earthquakes", "Tectonic plates slip along a fault, releasing energy as seismic waves that "
                   "shake the ground."),
    "chess_opening": ("Chess openings", "The Sicilian Defence answers 1.e4 with c5 and leads to sharp, "
                      "unbalanced positions."),
    "tax_deadline": ("Tax deadline", "Individual income tax returns are due by the fifteenth of April; file an "
                     "extension to get six more months."),
    "coffee_brewing": ("Brewing coffee", "Pour water just off the boil over medium-fine grounds; a ratio of one "
                       "to sixteen gives a balanced cup."),
    "marathon_training": ("Marathon training", "Build weekly mileage slowly, add one long run each week and "
                          "taper for three weeks before race day."),
}
QUERIES = {
    "q_bread": "how do I bake a loaf of bread with yeast",
    "q_car": "car maintenance: changing a flat tire or the engine oil",
    "q_cell": "which organelle makes energy for the cell",
    "q_quake": "what causes earthquakes",
    "q_unjudged": "nothing judges this one",
}
QRELS = [("q_bread", "bake_bread", 2), ("q_bread", "sourdough_starter", 1),
         ("q_car", "tire_change", 2), ("q_car", "oil_change", 2),
         ("q_cell", "mitochondria", 3), ("q_cell", "photosynthesis", 1),
         ("q_quake", "earthquake", 2), ("q_quake", "volcano", 1)]


def write_beir(folder):
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as out:
        for doc_id, (title, text) in CORPUS.items():
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as out:
        for qid, text in QUERIES.items():
            out.write(json.dumps({"_id": qid, "text": text}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    return folder


def test_eval_end_to_end_against_the_session_stack(stack, tmp_path, capsys):
    dataset = write_beir(tmp_path / "tiny-beir")
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(dataset), "--upload-url", stack.url("upload"),
                 "--search-url", stack.url("search"), "--admin-key", stack.admin_key, "--dsn", stack.dsn,
                 "--compare", "chroma", "--repeat", "2", "--window", "5", "--sweep", "alpha=0,1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "Chroma (vector, same vectors)" in printed and "BM25 (bm25s)" in printed
    assert "sweep of alpha" in printed

    results = json.loads((out / "results.json").read_text())
    assert results["dataset"]["documents"] == 12 and results["dataset"]["judged_queries"] == 4
    # the key the run made for its entity is revoked when it ends: no active eval key is left behind
    entity_id = results["config"]["entity_id"]
    status, listed = Client(stack.url("upload"), stack.admin_key).get("/admin/keys")
    made = [k for k in listed["keys"] if k["entity_ids"] == [entity_id]]
    assert status == 200 and [k["name"] for k in made] == [f"eval {entity_id}"]
    assert [k for k in made if k["revoked_at"] is None] == []
    # uploaded five at a time (--window 5), each wave once the previous documents were ingested
    assert results["config"]["ingest"]["ready"] == 12 and not results["config"]["ingest"]["failed"]
    assert results["config"]["settled"]  # VACUUM ANALYZE after the load, before anything is timed
    systems = results["systems"]
    # every mode, and "default" (what a request naming no strategy gets) always
    assert list(systems) == ["edgeindex-hybrid", "edgeindex-vector", "edgeindex-text", "edgeindex-auto",
                             "edgeindex-default", "chroma", "bm25"]
    for key, system in systems.items():
        assert system["queries"] == 4, key
        assert system["documents"] == 12, key
        assert system["latency_ms"]["n"] == 8 and system["latency_ms"]["p50"] > 0, key
        assert set(system["metrics"]) == {"recall@10", "mrr@10", "map@10", "ndcg@10"}
    # what the worker says it spent, next to what the client measured
    server = systems["edgeindex-hybrid"]["server_latency_ms"]
    assert server["took_ms"]["n"] == 8 and server["embed_ms"]["n"] == 8
    assert server["took_ms"]["p50"] <= systems["edgeindex-hybrid"]["latency_ms"]["p50"]
    assert systems["edgeindex-text"]["params"] == {"strategy": "text"}
    assert systems["edgeindex-vector"]["params"] == {"strategy": "vector"}
    assert systems["edgeindex-auto"]["params"] == {"strategy": "auto"} and systems["edgeindex-default"]["params"] == {}
    assert systems["edgeindex-auto"]["server_latency_ms"]["route_ms"]["n"] == 8  # the router ran on every query
    # what auto served, from each answer's routing (as telemetry logs it), and its regret against the
    # per-query oracle over the fixed modes of the same run
    served = systems["edgeindex-auto"]["routing"]
    assert served["queries"] == 4 and sum(served["mix"].values()) == 4 and sum(served["alphas"].values()) == 4
    assert "routing" not in systems["edgeindex-hybrid"]
    oracle = results["routing"]
    assert oracle["over"] == ["hybrid", "text", "vector"]
    best_per_query = [max(systems[f"edgeindex-{m}"]["per_query"][q]["ndcg"] for m in oracle["over"])
                      for q in systems["edgeindex-auto"]["per_query"]]
    assert oracle["oracle"] == round(sum(best_per_query) / 4, 4)
    assert oracle["regret"] == round(1 - oracle["auto"] / oracle["oracle"], 4)
    assert oracle["auto"] == round(systems["edgeindex-auto"]["metrics"]["ndcg@10"], 4)
    assert "per-query oracle over hybrid, text, vector" in printed

    # the queries are easy: the right document leads for the hybrid route
    assert systems["edgeindex-hybrid"]["metrics"]["mrr@10"] >= 0.75
    # both judged documents of every query make its top 10 of twelve
    assert systems["edgeindex-hybrid"]["metrics"]["recall@10"] == 1.0
    # Chroma indexes the vectors the stack stored, and embeds queries with the same model:
    # on twelve documents (exact neighbours either way) it ranks like the vector-only route
    for qid, scores in systems["chroma"]["per_query"].items():
        assert scores["ndcg"] == systems["edgeindex-vector"]["per_query"][qid]["ndcg"], qid
    assert systems["chroma"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"

    sweep = results["sweep"]
    assert sweep["param"] == "alpha" and [p["value"] for p in sweep["points"]] == [0.0, 1.0]
    assert sweep["points"][1]["metrics"] == systems["edgeindex-vector"]["metrics"]
    for name in ("metrics.png", "latency_cdf.png", "sweep_alpha.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name


def test_eval_trajectory_counts_what_each_step_adds_against_independent_searches(stack, tmp_path, capsys):
    dataset = write_beir(tmp_path / "tiny-beir")
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(dataset), "--trajectory", "3", "--k", "1", "--upload-url",
                 stack.url("upload"), "--search-url", stack.url("search"), "--admin-key", stack.admin_key,
                 "--window", "12", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "trajectory / independent at step 3: relevant chunks" in printed
    results = json.loads((out / "trajectory.json").read_text())
    assert results["dataset"]["judged_queries"] == 4 and results["config"]["steps"] == 3
    per_query = results["per_query"]
    for qid in ("q_bread", "q_car", "q_cell", "q_quake"):
        steps = results["reformulations"][qid]
        assert steps[0] == QUERIES[qid] and all(s.startswith(QUERIES[qid]) for s in steps[1:]), steps
        # the same query again: a plain search would answer what the trajectory has, so nothing is new
        assert [s["novelty_chunks"] for s in per_query["repeat"][qid]] == [1.0, 0.0, 0.0], qid
        # a trajectory never returns a chunk twice: three steps of k=1, three distinct chunks, both judged ones
        assert per_query["trajectory"][qid][-1]["relevant_chunks"] == 2, qid
        assert per_query["independent"][qid][-1]["relevant_chunks"] <= 2
        assert per_query["trajectory"][qid][-1]["tokens"] > per_query["trajectory"][qid][0]["tokens"]
    last = {way: results["steps"][way][-1] for way in ("independent", "trajectory")}
    assert last["trajectory"]["recall_documents"] == 1.0
    assert last["trajectory"]["relevant_chunks"] > last["independent"]["relevant_chunks"]
    assert results["ratio"]["relevant_chunks"] == round(last["trajectory"]["relevant_chunks"]
                                                        / last["independent"]["relevant_chunks"], 3)


def test_eval_trajectory_needs_two_steps_or_more(stack, tmp_path, capsys):
    dataset = write_beir(tmp_path / "tiny-beir")
    code = main(["eval", "--dataset", str(dataset), "--trajectory", "1", "--upload-url", stack.url("upload"),
                 "--search-url", stack.url("search"), "--admin-key", stack.admin_key])
    assert code == 2 and "--trajectory takes 2 to 10 steps" in capsys.readouterr().err


def test_eval_compares_another_models_vectors_of_the_same_chunks_dense_and_fused_with_bm25(stack, tmp_path, capsys):
    from edgeindex.bindings.ai import local_embedder
    from edgeindex.evaluation import beir, metrics
    from edgeindex.evaluation.baselines import BM25Baseline

    dataset = write_beir(tmp_path / "tiny-beir")
    out = tmp_path / "out"
    code = main(["eval", "--dataset", str(dataset), "--upload-url", stack.url("upload"),
                 "--search-url", stack.url("search"), "--admin-key", stack.admin_key, "--dsn", stack.dsn,
                 "--modes", "text", "--compare", "model:multilingual-e5-small", "--k", "12", "--repeat", "1",
                 "--window", "12", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "multilingual-e5-small (vector, its own vectors of the chunks)" in printed
    assert "multilingual-e5-small + BM25 (reciprocal rank fusion)" in printed
    results = json.loads((out / "results.json").read_text())
    systems, entity = results["systems"], results["config"]["entity_id"]
    dense, fused = systems["model:multilingual-e5-small"], systems["model:multilingual-e5-small+bm25"]
    with psycopg.connect(stack.dsn) as conn:
        chunks = conn.execute("SELECT document_id, content FROM chunks WHERE entity_id = %s", (entity,)).fetchall()
    assert dense["model_id"] == "intfloat/multilingual-e5-small" and dense["embedded"] == dense["chunks"] == len(chunks)

    # the same rankings from e5's own vectors of the stored chunks, each document ranked by its best chunk,
    # and their reciprocal rank fusion (k = 60) with BM25's top 100
    e5 = local_embedder(model="multilingual-e5-small")
    matrix = e5.encode_sync([content for _, content in chunks])
    corpus = beir.load(str(dataset)).corpus
    bm25 = BM25Baseline(list(corpus), [d.content for d in corpus.values()])
    dense_run, fused_run = {}, {}
    for qid in dense["per_query"]:
        scores = matrix @ e5.encode_query_sync(QUERIES[qid])
        dense_run[qid] = list(dict.fromkeys(chunks[i][0] for i in np.argsort(-scores)))
        points: dict[str, float] = {}
        for ranking in (dense_run[qid], bm25.search(QUERIES[qid], 100)[0]):
            for rank, document_id in enumerate(ranking, 1):
                points[document_id] = points.get(document_id, 0) + 1 / (60 + rank)
        fused_run[qid] = sorted(points, key=lambda d: -points[d])
    qrels = {q: {d: g for qq, d, g in QRELS if qq == q} for q in dense["per_query"]}
    assert len(qrels) == 4
    for system, run in ((dense, dense_run), (fused, fused_run)):
        want = metrics.per_query(qrels, run, 12)
        for qid, scores in system["per_query"].items():
            assert scores["ndcg"] == pytest.approx(want[qid]["ndcg"], abs=1e-6), qid
