"""Among near-duplicates only: a tool whose required parameters the request evidences better (a parameter's
name word, an enum value, a number for a numeric parameter, a year or date for a date-like one) moves ahead of
a near-duplicate (definition cosine >= t) ranked just above it; the rest of the ranking is untouched."""
import re, sys
sys.path.insert(0, "results/selection/session8")
from alloc import *
from ltr import DEFS
from edgeindex.selection.text import terms, split_identifier

NUM = re.compile(r"\d")
DATE = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b|\d{4}-\d\d-\d\d|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)

def fit(i, q, qt, mode):
    d = DEFS[i]; props = d.parameters.get("properties") or {}
    req = [p for p in (d.parameters.get("required") or []) if p in props] or list(props)
    if not req: return 0.0
    hits = 0
    for p in req:
        spec = props[p] if isinstance(props[p], dict) else {}
        words = set(terms(" ".join(split_identifier(p))))
        typ = spec.get("type"); enum = spec.get("enum") or []
        ok = bool(words & qt)
        ok = ok or any(str(e).lower() in q.lower() for e in enum[:50])
        if mode >= 1 and typ in ("integer", "number", "float") and NUM.search(q): ok = True
        if mode >= 1 and any(w in p.lower() for w in ("date", "year", "time")) and DATE.search(q): ok = True
        if mode >= 2 and typ == "string" and not enum: ok = True
        hits += ok
    return hits / len(req)

def alloc(d, t=0.85, mode=1, margin=1.0, depth=10):
    f = d["whole"]["fused"].copy(); order = [int(i) for i in np.argsort(-f, kind="stable")[:depth]]
    q = d["q"]["query"]; qt = set(terms(q))
    fits = {i: fit(i, q, qt, mode) for i in order}
    # bubble: a better-fitting near-duplicate within `margin` z below swaps ahead
    changed = True
    while changed:
        changed = False
        for a in range(len(order) - 1):
            i, j = order[a], order[a + 1]
            if float(TV[i] @ TV[j]) >= t and fits[j] > fits[i] and f[i] - f[j] <= margin:
                order[a], order[a + 1] = j, i; changed = True
    rank = {i: r for r, i in enumerate(order)}
    g = f.copy()
    for i in order: g[i] = 1000 - rank[i]
    return baseline({**d, "whole": {**d["whole"], "fused": np.where(np.isin(np.arange(len(f)), order), g, f)}}) if False else _alloc(d, order)

def _alloc(d, order):
    f = d["whole"]["fused"]
    picks = picks_of(d["sents"])
    lead = order[:LEAD]
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + order):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in lead and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    P = ("tune",)
    print("base", score(baseline, P), score(_alloc_base := (lambda d: _alloc(d, [int(i) for i in np.argsort(-d["whole"]["fused"], kind="stable")[:10]])), P))
    for mode in (0, 1, 2):
        for t in (0.75, 0.85, 0.9):
            for margin in (0.5, 1.0, 2.0):
                print("mode", mode, "t", t, "margin", margin, score(alloc, P, t=t, mode=mode, margin=margin))
