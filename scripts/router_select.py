"""Choose the router fit's settings by leave-one-dataset-out: a grid over (features, L2, switch cost),
LOO gain over the fixed blend per config, and a nested LOO (settings chosen on the other sets only).

usage: python scripts/router_select.py results/router/training.json results/router/training-msmarco.json
"""
import sys, json, itertools, numpy as np
from edgeindex.evaluation import router_training as T
from edgeindex.routing.features import NAMES
data = [d for p in sys.argv[1:] for d in T.load(p)]
EVID = ('matched_share','rare_share','best_idf','bm25_best','bm25_gap','lexical_hits')
FS = {'all': NAMES, 'evidence+frag': EVID + ('fragmentation','oov_share'), 'evidence': EVID}
GRID = [(f, l2, c) for f in FS for l2 in (1e-3, 1e-2, 3e-2) for c in (0, 0.05, 0.1, 0.2)]
def nd(model, d):
    names=[n for n,_ in model.bins]
    return float(np.mean([r['ndcg'][names[model.decide(r['features'])]] for r in d['rows'].values()]))
def blend(d): return float(np.mean([r['ndcg']['hybrid-0.8'] for r in d['rows'].values()]))
def loo(sets, cfg):
    f,l2,c = cfg
    return [nd(T.fit([d for d in sets if d is not h], l2=l2, switch_cost=c, features=FS[f]), h) - blend(h) for h in sets]
table = {}
for cfg in GRID:
    diffs = loo(data, cfg)
    m = T.fit(data, l2=cfg[1], switch_cost=cfg[2], features=FS[cfg[0]])
    ins = [nd(m, d) - blend(d) for d in data]
    table[cfg] = (diffs, ins)
    print(f"{cfg[0]:<14} l2={cfg[1]:<6} c={cfg[2]:<5} LOO-blend " + " ".join(f"{v:+.4f}" for v in diffs) + " | IN-blend " + " ".join(f"{v:+.4f}" for v in ins) + ("  OK" if min(diffs+ins) >= -1e-9 else ""), flush=True)
print([d['dataset'] for d in data], 'blend', [round(blend(d),4) for d in data])
# nested: for each outer held-out set choose cfg by inner LOO on the others (max of min gain, then mean)
print("nested:")
for h in data:
    rest = [d for d in data if d is not h]
    best = max(GRID, key=lambda cfg: (lambda g: (round(min(g),4), np.mean(g)))(loo(rest, cfg)))
    m = T.fit(rest, l2=best[1], switch_cost=best[2], features=FS[best[0]])
    print(f"  {h['dataset']}: chose {best}, auto {nd(m,h):.4f} vs blend {blend(h):.4f}", flush=True)
