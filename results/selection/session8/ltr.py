"""A small learned fusion: logistic regression over generic query-tool features, fit on the tuning half's
candidates (the whole request's first DEPTH tools), used to reorder them; allocation as select's."""
import sys, json
sys.path.insert(0, "results/selection/session8")
from alloc import *
from edgeindex.selection.text import terms, split_identifier
from edgeindex.selection.definitions import parse_tool
from sklearn.linear_model import LogisticRegression

DEFS = [parse_tool(json.loads(l), "t") for l in open("../shared/data/tools-bfcl/tools.jsonl") if l.strip()]
NAME_T = [set(terms(" ".join(split_identifier(d.name)))) for d in DEFS]
LEAF_T = [set(terms(" ".join(split_identifier(d.name.rsplit(".", 1)[-1])))) for d in DEFS]
PARAM_T = [[set(terms(" ".join(split_identifier(p)))) for p in (d.parameters.get("properties") or {})] for d in DEFS]
REQ = [set(d.parameters.get("required") or []) for d in DEFS]
PNAMES = [list(d.parameters.get("properties") or {}) for d in DEFS]
DESC_T = [set(terms(d.description or "")) for d in DEFS]
DEPTH = 20

def feats(d, cands):
    f = d["whole"]["fused"]; vz = zscore(d["whole"]["vec"]); bz = (f - 0.6 * vz) / 0.4
    qt = set(terms(d["q"]["query"]))
    top = float(f.max())
    sent_best = np.max([s["fused"] for s in d["sents"]], axis=0) if d["sents"] else f
    rows = []
    for r, i in enumerate(cands):
        nt = NAME_T[i]; lt = LEAF_T[i]
        pc = [len(p & qt) > 0 for p in PARAM_T[i]]
        rows.append([f[i], vz[i], bz[i], top - f[i], sent_best[i], np.log1p(r),
                     len(nt & qt) / max(len(nt), 1), len(lt & qt) / max(len(lt), 1),
                     float(np.mean(pc)) if pc else 0.0, len(DESC_T[i] & qt) / max(len(DESC_T[i]), 1)])
    return np.asarray(rows, np.float32)

def dataset(part):
    X, y = [], []
    for d in DATA:
        if d["split"] != part: continue
        f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")[:DEPTH]
        exp = set(d["q"]["expected"])
        X.append(feats(d, order)); y += [NAMES[i] in exp for i in order]
    return np.vstack(X), np.asarray(y)

def reranked(d, model, cols, lead=LEAD):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")[:DEPTH]
    p = model.decision_function(feats(d, order)[:, cols])
    new = [int(order[j]) for j in np.argsort(-p, kind="stable")]
    picks = picks_of(d["sents"])
    chosen = list(d["named"])
    for i in dict.fromkeys(new[:lead] + picks + new):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in new[:lead] and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    X, y = dataset("tune")
    print(X.shape, y.sum())
    names = ["fused", "vz", "bz", "gap", "sent_best", "logrank", "name_cov", "leaf_cov", "param_cov", "desc_cov"]
    sets = {"core": [0, 1, 2, 3, 5], "core+sent": [0, 1, 2, 3, 4, 5], "core+name": [0, 1, 2, 3, 5, 6, 7],
            "core+param": [0, 1, 2, 3, 5, 8], "core+desc": [0, 1, 2, 3, 5, 9], "all": list(range(10))}
    print("base", score(baseline))
    for nm, cols in sets.items():
        for C in (0.1, 1.0):
            m = LogisticRegression(C=C, max_iter=2000).fit(X[:, cols], y)
            print(nm, C, score(reranked, ("tune",), model=m, cols=cols), np.round(m.coef_[0], 2).tolist())
