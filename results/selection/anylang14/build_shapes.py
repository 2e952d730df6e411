"""Other catalogue shapes derived from ../shared/data/tools-bfcl and indices-spider, for
`edgeindex eval --tools` / `--indices` (checks that each loads and where edgeindex stands against the
baselines; nothing was tuned on them). tools-bfcl itself already has no categories and plain-list
parameters.

- schema/:  the same 769 tools with parameters as a JSON Schema object (MCP / OpenAI style).
- short/:   every description cut to its first four words ("Calculate the area of").
- small20/: 20-tool catalogues: the expected tools of the first requests (in file order) until 20
            tools, the requests all of whose tools are among them. Several such blocks are written
            (small20_0 ... small20_4), each a separate catalogue.
- big5000/: the 769 tools plus 4,231 distractors made from indices-spider's tables and columns
            ("concert_singer.singer.get_age": "Look up the age of a singer in the concert singer
            database."), all 1,000 requests.
- spider-fields/: indices-spider's databases with description "" (as they are: fields only) is the
            development set itself; nothing to write.

Usage: python build_shapes.py ../shared/data /tmp/anylang14-shapes
"""

import json
import re
import sys
from pathlib import Path


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(folder: Path, tools: list[dict], queries: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))


# bfcl's plain lists use Python's type names; a JSON Schema author writes JSON Schema's
JSON_TYPES = {"float": "number", "int": "integer", "str": "string", "bool": "boolean", "dict": "object",
              "list": "array", "tuple": "array", "any": None}


def as_schema(params: list[dict]) -> dict:
    def prop(p: dict) -> dict:
        kind = JSON_TYPES.get(p.get("type"), p.get("type"))
        return {**({"type": kind} if kind else {}), **({"description": p["description"]} if p.get("description") else {})}

    return {"type": "object", "properties": {p["name"]: prop(p) for p in params},
            "required": [p["name"] for p in params if p.get("required")]}


def words(identifier: str) -> str:
    return " ".join(w.lower() for w in re.split(r"[_\W]+", identifier) if w)


def main(data: Path, out: Path) -> None:
    tools = jsonl(data / "tools-bfcl" / "tools.jsonl")
    queries = jsonl(data / "tools-bfcl" / "queries.jsonl")
    for t in tools:
        t.pop("n_definition_variants", None)
    write(out / "schema", [{**t, "parameters": as_schema(t["parameters"])} for t in tools], queries)
    write(out / "short", [{**t, "description": " ".join(t["description"].split()[:4])} for t in tools], queries)
    by_name = {t["name"]: t for t in tools}
    start = 0
    for block in range(5):
        chosen: list[str] = []
        for q in queries[start:]:
            start += 1
            new = [e for e in q["expected"] if e not in chosen]
            if len(chosen) + len(new) > 20:
                break
            chosen.extend(new)
            if len(chosen) == 20:
                break
        held = set(chosen)
        write(out / f"small20_{block}", [by_name[n] for n in chosen], [q for q in queries if set(q["expected"]) <= held])
    distractors = []
    for db in jsonl(data / "indices-spider" / "indices.jsonl"):
        for field in db["fields"]:
            table, _, column = field.partition(".")
            name = f"{db['name']}.{table}.get_{re.sub(r'[^A-Za-z0-9_]', '_', column)}".lower()
            distractors.append({"name": name, "category": None,
                                "description": f"Look up the {words(column)} of a {words(table)} in the "
                                               f"{words(db['name'])} database.",
                                "parameters": [{"name": f"{words(table).replace(' ', '_')}_id", "type": "string",
                                                "description": f"The id of the {words(table)}.", "required": True}]})
    seen = set(by_name)
    unique = []
    for d in distractors:
        if d["name"] not in seen:
            seen.add(d["name"])
            unique.append(d)
    write(out / "big5000", tools + unique[:5000 - len(tools)], queries)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
