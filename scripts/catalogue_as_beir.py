"""Write a tool or index catalogue (tools-bfcl, indices-spider) as a BEIR retrieval set.

The router is trained and judged on retrieval sets (``edgeindex router train``); a catalogue is one
more domain written by other people: short documents full of identifiers (function and field names)
and requests that paraphrase them. Each tool (or table, with ``--tables``) becomes a document of its
name, description and parameters (fields); each request a query whose relevant documents are the
tools (tables) it needs.

usage: python scripts/catalogue_as_beir.py ../shared/data/tools-bfcl OUT [--limit N]
       python scripts/catalogue_as_beir.py ../shared/data/indices-spider OUT --tables [--limit N]
"""
import argparse
import json
from pathlib import Path


def tool_document(tool: dict) -> dict:
    params = "; ".join(f"{p['name']} ({p.get('type') or 'any'}): {p.get('description') or ''}".strip()
                       for p in tool.get("parameters") or [])
    text = " ".join(part for part in (tool.get("description") or "", f"Parameters: {params}." if params else "") if part)
    return {"_id": tool["name"], "title": tool["name"], "text": text or tool["name"]}


def table_document(table: dict) -> dict:
    fields = ", ".join(table.get("fields") or [])
    text = " ".join(part for part in (table.get("description") or "",
                                      f"Table {table['name']} of database {table.get('db', '')}; fields: {fields}.")
                    if part)
    return {"_id": table["name"], "title": table["name"], "text": text}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def convert(source: Path, out: Path, *, tables: bool, limit: int | None) -> tuple[int, int]:
    if tables:
        documents = [table_document(t) for t in read(source / "indices_tables.jsonl")]
        requests = read(source / "queries_tables.jsonl")
    else:
        documents = [tool_document(t) for t in read(source / "tools.jsonl")]
        requests = read(source / "queries.jsonl")
    known = {d["_id"] for d in documents}
    requests = [r for r in requests if set(r["expected"]) <= known]
    if limit and len(requests) > limit:  # spread over the catalogue (requests come grouped by database)
        step = len(requests) / limit
        requests = [requests[int(i * step)] for i in range(limit)]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    (out / "queries.jsonl").write_text("".join(json.dumps({"_id": str(r["id"]), "text": r["query"]}) + "\n"
                                               for r in requests))
    lines = ["query-id\tcorpus-id\tscore"] + [f"{r['id']}\t{name}\t1" for r in requests for name in r["expected"]]
    (out / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return len(documents), len(requests)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write a tool or index catalogue as a BEIR retrieval set")
    parser.add_argument("source", type=Path, help="tools-bfcl or indices-spider folder")
    parser.add_argument("out", type=Path, help="the BEIR folder to write")
    parser.add_argument("--tables", action="store_true", help="an index catalogue: one document per table")
    parser.add_argument("--limit", type=int, help="at most this many requests, evenly spread")
    args = parser.parse_args()
    documents, queries = convert(args.source, args.out, tables=args.tables, limit=args.limit)
    print(json.dumps({"out": str(args.out), "documents": documents, "queries": queries}))
