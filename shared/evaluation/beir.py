"""BEIR-format datasets: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

``corpus.jsonl`` rows are ``{"_id", "title", "text"}``; ``queries.jsonl`` rows are
``{"_id", "text"}``; qrels are tab-separated ``query-id  corpus-id  score`` with an
optional header line (BEIR writes one, MS MARCO exports often do not) and graded
integer scores. TREC's four-column form (``qid 0 docid grade``) is read too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ValidationError

# ../shared/data beside the repository holds the development datasets
REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """What every system indexes: the text, preceded by the title unless the text already has it."""
        if not self.title or self.text.startswith(self.title):
            return self.text
        return f"{self.title}\n\n{self.text}"


@dataclass
class Dataset:
    name: str
    path: Path
    corpus: dict[str, Document]
    queries: dict[str, str]                      # every query of queries.jsonl
    qrels: dict[str, dict[str, int]]             # query id -> corpus id -> grade
    warnings: list[str] = field(default_factory=list)
    qrels_path: Path | None = None

    @property
    def judged_queries(self) -> dict[str, str]:
        """Queries with at least one relevant judgement: the ones evaluated."""
        return {qid: self.queries[qid] for qid, grades in self.qrels.items()
                if any(g >= 1 for g in grades.values())}


def resolve(path: str | Path) -> Path:
    """The dataset folder: ``path`` as given, else relative to the repository, else a name under ../shared/data."""
    given = Path(path).expanduser()
    for candidate in (given, REPO_ROOT / given, SHARED_DATA / given):
        if (candidate / "corpus.jsonl").is_file():
            return candidate.resolve()
    raise ValidationError(f"no BEIR dataset at {path} (looked for corpus.jsonl there, under {REPO_ROOT} "
                          f"and under {SHARED_DATA})", field="dataset")


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{path}:{number}: not JSON ({exc.msg})", field="dataset") from None
            if not isinstance(row, dict) or "_id" not in row:
                raise ValidationError(f"{path}:{number}: expected an object with an _id", field="dataset")
            rows.append(row)
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) == 4:          # TREC: qid iteration docid grade
                parts = [parts[0], parts[2], parts[3]]
            if len(parts) != 3:
                raise ValidationError(f"{path}:{number}: expected 'query-id corpus-id score'", field="dataset")
            qid, doc_id, score = parts
            try:
                grade = int(float(score))
            except ValueError:
                if number == 1:
                    continue             # the header line
                raise ValidationError(f"{path}:{number}: score {score!r} is not a number", field="dataset") from None
            qrels.setdefault(qid, {})[doc_id] = grade
    return qrels


def load(path: str | Path, *, split: str = "test", qrels: str | Path | None = None) -> Dataset:
    """Read a BEIR folder; ``qrels`` names another judgement file to use instead of ``qrels/<split>.tsv``."""
    folder = resolve(path)
    qrels_path = Path(qrels) if qrels else folder / "qrels" / f"{split}.tsv"
    for required in (folder / "queries.jsonl", qrels_path):
        if not required.is_file():
            raise ValidationError(f"{required} is missing", field="dataset")
    corpus: dict[str, Document] = {}
    for row in _read_jsonl(folder / "corpus.jsonl"):
        doc_id = str(row["_id"])
        corpus[doc_id] = Document(doc_id, str(row.get("title") or "").strip(), str(row.get("text") or ""))
    queries = {str(row["_id"]): str(row.get("text") or "") for row in _read_jsonl(folder / "queries.jsonl")}
    judgements = read_qrels(qrels_path)
    warnings = []
    unknown_queries = sorted(set(judgements) - set(queries))
    if unknown_queries:
        warnings.append(f"{len(unknown_queries)} judged query id(s) are not in queries.jsonl and are skipped: "
                        f"{unknown_queries[:5]}")
        for qid in unknown_queries:
            del judgements[qid]
    unknown_docs = sum(doc not in corpus for grades in judgements.values() for doc in grades)
    if unknown_docs:
        warnings.append(f"{unknown_docs} judgement(s) name documents absent from the corpus "
                        "(they still count as relevant: recall cannot reach 1 on those queries)")
    dataset = Dataset(folder.name, folder, corpus, queries, judgements, warnings, qrels_path.resolve())
    if not dataset.judged_queries:
        raise ValidationError(f"{qrels_path} has no relevant judgement for any query of queries.jsonl",
                              field="dataset")
    return dataset
