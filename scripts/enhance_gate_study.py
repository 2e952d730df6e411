"""Where does PRF gain? Per query, the NDCG@10 change of `<mode>+prf` over `<mode>`, against the first
pass's evidence the gate reads (best lexical share `top`, query words), from `edgeindex eval` results.

    .venv/bin/python scripts/enhance_gate_study.py results/enhance/*/results.json
"""

from __future__ import annotations

import json
import sys


def study(path: str) -> None:
    systems = json.load(open(path))["systems"]
    for base in ("text", "hybrid"):
        plain, prf = systems.get(f"edgeindex-{base}"), systems.get(f"edgeindex-{base}+prf")
        if not plain or not prf:
            continue
        evidence = prf.get("enhancement", {}).get("per_query", {})
        rows = [(evidence.get(q, {}).get("top", -1.0), evidence.get(q, {}).get("words", -1),
                 prf["per_query"][q]["ndcg"] - m["ndcg"])
                for q, m in plain["per_query"].items() if q in prf["per_query"]]
        print(f"{path}: {base}, {len(rows)} queries, mean NDCG@10 change {sum(r[2] for r in rows) / len(rows):+.4f}")
        for gate in (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
            kept = [r for r in rows if r[0] <= gate]
            print(f"   PRF only where top <= {gate}: mean change {sum(r[2] for r in kept) / len(rows):+.4f}, "
                  f"applied to {len(kept)}")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        study(name)
