"""The A/B table of session 22 (ab.sh): wrk lines per run, in the order run.

  .venv/bin/python results/throughput/session22/ab_table.py results/throughput/session22/ab_{8bit_a,fp32_a,...}.txt"""
import json
import sys
from pathlib import Path

print("| run | 1 agent uncached: req/s, p99; CPU | 1 agent semantic: req/s (x uncached); CPU per hit "
      "| 8 agents uncached: req/s, p99; CPU | 8 agents semantic: req/s (x uncached); CPU per hit |")
print("| --- | --- | --- | --- | --- |")
for name in sys.argv[1:]:
    lines = [json.loads(l) for l in open(name) if l.startswith("{")]
    wrk = {(d["agents"], d["phase"]): d for d in lines if d.get("client") == "wrk"}
    cells = []
    for agents in (1, 8):
        u, s = wrk[(agents, "uncached")], wrk[(agents, "semantic")]
        cu, cs = u["cpu_ms_per_request"], s["cpu_ms_per_request"]
        cells.append(f"{u['req_per_s']:.1f}, {u['p99_ms']:.1f}; {cu['search']:.2f} + {cu['postgres']:.2f}")
        cells.append(f"{s['req_per_s']:.1f} ({s['req_per_s'] / u['req_per_s']:.2f}x); {cs['search']:.2f}")
    tag = Path(name).stem.removeprefix("ab_").replace("_", " ")
    print(f"| {tag} | " + " | ".join(cells) + " |")
