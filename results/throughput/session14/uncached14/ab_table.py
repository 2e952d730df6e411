"""The A/B table of load_search outputs: one column per file, one row per (agents, phase, client)."""
import json
import sys

cols = sys.argv[1:]
data = {}
for f in cols:
    for line in open(f):
        if line.startswith('{"agents"'):
            d = json.loads(line)
            data.setdefault((d["agents"], d["phase"], d["client"]), {})[f] = d
print("| phase | " + " | ".join(c.split("/")[-1].replace(".txt", "") for c in cols) + " |")
print("| --- |" + " --- |" * len(cols))
for key in sorted(data, key=lambda k: (k[1] != "uncached", k[1], k[0], k[2])):
    cells = []
    for c in cols:
        d = data[key].get(c)
        if not d:
            cells.append("")
            continue
        cpu = d.get("cpu_ms_per_request", {})
        parts = "+".join(f"{cpu[k]:.2f}" for k in ("client", "search", "postgres") if k in cpu)
        cells.append(f"{d['req_per_s']:.1f}/s, p50 {d['p50_ms']}, p99 {d['p99_ms']}; {parts} (load {d['load']})")
    print(f"| {key[0]} agents {key[1]} ({key[2]}) | " + " | ".join(cells) + " |")
