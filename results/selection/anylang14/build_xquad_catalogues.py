"""Selection catalogues in other languages from ../shared/data/xquad-{de,zh} (BEIR format), for
`edgeindex eval --indices` and `--tools`. Built without looking at any system's answers.

XQuAD's corpus is 48 Wikipedia articles (ids `<lang>-aNN-pNN`, 5 paragraphs each, titles left out);
each query's one relevant paragraph names its article.

- indices.jsonl / queries.jsonl (databases variant): one index per article, named `article_NN` (the
  name says nothing: the titles are not in the data), description = the first sentence of each of its
  paragraphs, no fields; a question's expected index is its paragraph's article.
- indices_tables.jsonl / queries_tables.jsonl: one index per paragraph (`article_NN_part_MM`),
  description = the paragraph's first two sentences; expected = the question's paragraph.
- tools/: a tools-style catalogue, said plainly: paragraph lookup dressed as tools. One tool per
  paragraph, `lookup_article_NN_part_MM`, description = the paragraph's first sentence, one parameter
  `question` (string), category `article_NN`; a request's expected tool is its paragraph's.

Usage: python build_xquad_catalogues.py ../shared/data/xquad-zh /tmp/anylang14-cat/zh
"""

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

_SENTENCE = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(source: Path, out: Path) -> None:
    corpus = [json.loads(line) for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels = {}
    for line in (source / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, _ = line.split("\t")
        qrels[qid] = did
    articles: dict[str, list[dict]] = defaultdict(list)
    for doc in corpus:
        _, article, part = doc["_id"].split("-")
        articles[article].append({"part": part, "text": doc["text"]})

    def names(did: str) -> tuple[str, str]:
        _, article, part = did.split("-")
        return f"article_{article[1:]}", f"article_{article[1:]}_part_{part[1:]}"

    write(out / "indices.jsonl", [{"name": f"article_{a[1:]}", "description": " ".join(sentences(p["text"])[0] for p in ps),
                                   "fields": []} for a, ps in sorted(articles.items())])
    write(out / "indices_tables.jsonl", [{"name": f"article_{a[1:]}_part_{p['part'][1:]}",
                                          "description": " ".join(sentences(p["text"])[:2]), "fields": []}
                                         for a, ps in sorted(articles.items()) for p in ps])
    write(out / "queries.jsonl", [{"query": q["text"], "expected": names(qrels[q["_id"]])[0], "id": q["_id"]}
                                  for q in queries if q["_id"] in qrels])
    write(out / "queries_tables.jsonl", [{"query": q["text"], "expected": names(qrels[q["_id"]])[1], "id": q["_id"]}
                                         for q in queries if q["_id"] in qrels])
    write(out / "tools" / "tools.jsonl", [
        {"name": f"lookup_article_{a[1:]}_part_{p['part'][1:]}", "description": sentences(p["text"])[0],
         "category": f"article_{a[1:]}",
         "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}
        for a, ps in sorted(articles.items()) for p in ps])
    write(out / "tools" / "queries.jsonl", [{"query": q["text"], "expected": ["lookup_" + names(qrels[q["_id"]])[1]],
                                             "id": q["_id"]} for q in queries if q["_id"] in qrels])


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
