"""BEIR folder loading: qrels with and without a header, graded scores, bad input named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from edgeindex.errors import ValidationError
from edgeindex.evaluation import beir

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def write_dataset(folder: Path, qrels: str, *, corpus=None, queries=None) -> Path:
    (folder / "qrels").mkdir(parents=True)
    corpus = corpus or [{"_id": "doc_1", "title": "Alpha", "text": "Alpha is first."},
                        {"_id": "doc_2", "title": "", "text": "Beta follows."},
                        {"_id": "doc_3", "title": "Gamma", "text": "The third letter."}]
    queries = queries or [{"_id": "q1", "text": "first letter"}, {"_id": "q2", "text": "second"},
                          {"_id": "q3", "text": "unjudged"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return folder


def test_qrels_with_header_and_graded_scores(tmp_path):
    ds = beir.load(write_dataset(tmp_path / "d", "query-id\tcorpus-id\tscore\nq1\tdoc_1\t2\nq1\tdoc_3\t1\nq2\tdoc_2\t0\n"))
    assert ds.qrels == {"q1": {"doc_1": 2, "doc_3": 1}, "q2": {"doc_2": 0}}
    assert list(ds.judged_queries) == ["q1"]        # q2 is judged but has nothing relevant; q3 unjudged
    assert ds.corpus["doc_1"].content == "Alpha is first."                  # title already leads the text
    assert ds.corpus["doc_3"].content == "Gamma\n\nThe third letter."
    assert ds.name == "d" and not ds.warnings


def test_qrels_without_header_and_trec_form(tmp_path):
    plain = beir.load(write_dataset(tmp_path / "a", "q1\tdoc_1\t1\nq2\tdoc_2\t3\n"))
    trec = beir.load(write_dataset(tmp_path / "b", "q1 0 doc_1 1\nq2 0 doc_2 3\n"))
    assert plain.qrels == trec.qrels == {"q1": {"doc_1": 1}, "q2": {"doc_2": 3}}


def test_unknown_ids_are_reported(tmp_path):
    ds = beir.load(write_dataset(tmp_path / "d", "q1\tdoc_1\t1\nq1\tghost\t1\nq7\tdoc_2\t1\n"))
    assert "q7" not in ds.qrels
    assert any("not in queries.jsonl" in w for w in ds.warnings)
    assert any("absent from the corpus" in w for w in ds.warnings)


def test_bad_input_names_the_file_and_line(tmp_path):
    with pytest.raises(ValidationError, match=r"test.tsv:2: score 'x' is not a number"):
        beir.load(write_dataset(tmp_path / "a", "q1\tdoc_1\t1\nq1\tdoc_2\tx\n"))
    folder = write_dataset(tmp_path / "b", "q1\tdoc_1\t1\n")
    (folder / "corpus.jsonl").write_text('{"_id": "a", "text": "ok"}\n{broken\n')
    with pytest.raises(ValidationError, match=r"corpus.jsonl:2: not JSON"):
        beir.load(folder)
    with pytest.raises(ValidationError, match="no relevant judgement"):
        beir.load(write_dataset(tmp_path / "c", "q1\tdoc_1\t0\n"))
    with pytest.raises(ValidationError, match="no BEIR dataset"):
        beir.load(tmp_path / "nowhere")


@pytest.mark.skipif(not (DATA / "msmarco").is_dir(), reason="../shared/data is not beside the repository")
def test_shared_datasets_resolve_by_name_and_load(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # resolved against the repository, not the working directory
    msmarco = beir.load("msmarco")
    assert msmarco.path == (DATA / "msmarco").resolve()
    assert len(msmarco.corpus) == 5000 and len(msmarco.judged_queries) == 43
    assert max(g for grades in msmarco.qrels.values() for g in grades.values()) == 3
    reports = beir.load("../shared/data/business-reports")      # relative to the repository
    assert len(reports.corpus) == 671 and len(reports.judged_queries) == 22  # corrected and extended judgements
    assert any("_" in doc_id for doc_id in reports.corpus)
