"""Print the tuning half's misses of select (alloc.baseline) for reading: the request, the missed tool's
definition, the five sent and the definition of the sent tool closest to the missed one.
  nice -n 15 .venv/bin/python results/selection/session10/read_misses.py > misses_tune.txt"""
import json, sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
from alloc import DATA, NAMES, P, baseline

DEFS, T = P["defs"], P["tool_vecs"]
IDX = {n: i for i, n in enumerate(NAMES)}

def brief(name):
    d = DEFS[name]
    props = (d.parameters or {}).get("properties") or {}
    req = (d.parameters or {}).get("required") or []
    ps = "; ".join(f"{p}{'*' if p in req else ''}: {str((v or {}).get('description', ''))[:70]}" for p, v in props.items())
    return f"{name} -- {d.description[:160]} [{ps[:300]}]"

n = 0
for d in DATA:
    if d["split"] != "tune": continue
    got = [NAMES[i] for i in baseline(d)][:5]
    miss = [e for e in d["q"]["expected"] if e not in got]
    if not miss: continue
    order = np.argsort(-d["whole"]["fused"], kind="stable")
    for m in miss:
        n += 1
        i = IDX[m]
        rank = int(np.where(order == i)[0][0]) + 1
        cos = {g: float(T[IDX[g]] @ T[i]) for g in got}
        near = max(cos, key=cos.get)
        print(f"#{n} {d['q']['id']}  rank {rank}  needed {d['q']['expected']}")
        print(f"  Q: {d['q']['query']}")
        print(f"  MISSED: {brief(m)}")
        print(f"  SENT: {got}")
        print(f"  CLOSEST SENT (cos {cos[near]:.2f}): {brief(near)}")
        print()
