"""Choose the router's features, bins, L2 and switch cost by leave-one-dataset-out, with a nested check.

Each configuration is scored by LODO on every set: the gain of ``auto`` (NDCG@10) over the best
fixed mode a user could pick instead (text, the fixed blend 0.8, vector), and whether it is at least
that mode on NDCG@10 AND Recall@10. The rule picks the configuration whose worst set gains most,
then the best mean gain, then the fewest parameters, then the larger switch cost and L2. Nested: for each set, the rule is applied to
LODO over the other sets only, and the chosen configuration (fitted on those sets) scores the held-out
one, so the choice is never made on the set it is judged by.

Stability comes first (``--first-rule`` leaves it out): a configuration is ranked by the worst of
its family (the same features and bins at every L2 and switch cost of the grid). With few sets, a
fit that passes at one L2 and fails at the next is fitted to this table, not to the languages and
domains behind it; without the rule, a configuration whose neighbours lose badly on one held-out
language can win.

usage: python scripts/select_router_settings.py TRAINING.json [...] [--first-rule]
  (TRAINING.json: rows saved by ``edgeindex router train --save``)
"""
import argparse

import numpy as np
from edgeindex.evaluation import router_training as T
from edgeindex.routing.features import NAMES

BASE15 = tuple(NAMES[:15])   # features.NAMES without the language, probe and tokenizer features
EVID = ('matched_share', 'rare_share', 'best_idf', 'bm25_best', 'bm25_gap', 'lexical_hits')
LANG = ('query_language_unknown', 'scope_language_unknown')
PROBE = ('probe_cosine', 'probe_spread')
FEATURES = {'all': tuple(NAMES), 'base15': BASE15, 'lang': LANG, 'lang+probe': LANG + PROBE,
            'lang+evid': LANG + EVID, 'lang+probe+evid': LANG + PROBE + EVID,
            'lang+probe+evid+tok': LANG + PROBE + EVID + ('oov_share', 'fragmentation', 'unk_share')}
B = dict([("text", 0.0), ("hybrid-0.1", 0.1), ("hybrid-0.2", 0.2), ("hybrid-0.3", 0.3), ("hybrid-0.5", 0.5),
          ("hybrid-0.8", 0.8), ("vector", 1.0)])
BINSETS = {name: tuple((n, B[n]) for n in names) for name, names in {
    'text,0.3,0.5,0.8,vector': ("text", "hybrid-0.3", "hybrid-0.5", "hybrid-0.8", "vector"),
    'text,0.2,0.5,0.8,vector': ("text", "hybrid-0.2", "hybrid-0.5", "hybrid-0.8", "vector"),
    'text,0.2,0.8,vector': ("text", "hybrid-0.2", "hybrid-0.8", "vector"),
    'text,0.3,0.8,vector': ("text", "hybrid-0.3", "hybrid-0.8", "vector"),
    'all7': tuple(B)}.items()}
GRID = [(f, b, l2, c) for f in FEATURES for b in BINSETS for l2 in (1e-3, 1e-2) for c in (0, 0.05, 0.1)]
FIXED = ('text', 'hybrid-0.8', 'vector')


def mean(d, bin_of, metric='ndcg'):
    return float(np.mean([r[metric][bin_of(r)] for r in d['rows'].values()]))


def best_fixed(d, metric='ndcg'):
    return max(mean(d, lambda r, n=n: n, metric) for n in FIXED)


def auto(model, d, metric='ndcg'):
    names = [n for n, _ in model.bins]
    return mean(d, lambda r: names[model.decide(r['features'])], metric)


def fit(sets, cfg):
    f, b, l2, c = cfg
    return T.fit(sets, features=FEATURES[f], bins=BINSETS[b], l2=l2, switch_cost=c)


def loo(sets, cfg):
    """(gain over the best fixed mode, at least that mode on both metrics) per held-out set."""
    out = []
    for h in sets:
        m = fit([d for d in sets if d is not h], cfg)
        gain = auto(m, h) - best_fixed(h)
        ok = gain >= -1e-9 and auto(m, h, 'recall') >= best_fixed(h, 'recall') - 1e-9
        out.append((gain, ok))
    return out


def key(cfg, result, table=None):
    """Rank of a configuration: first its family's stability (with STABLE: how many of the
    configurations with the same features and bins, at every L2 and switch cost of the grid, keep
    every set at or above the best fixed mode), then its own sets at or above, worst gain, mean gain, fewer
    parameters, the larger switch cost and L2 (the safer model for sets unlike these)."""
    gains = [g for g, _ in result]
    size = len(FEATURES[cfg[0]]) * len(BINSETS[cfg[1]])
    family = ()
    if STABLE and table is not None:
        runs = [table[c] for c in GRID if c[:2] == cfg[:2]]
        family = (sum(all(ok for _, ok in r) for r in runs),)   # how many of them keep every set
    return (*family, sum(ok for _, ok in result), round(min(gains), 4), round(float(np.mean(gains)), 4), -size,
            cfg[3], cfg[2])


STABLE = True


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="choose the router fit's settings by leave-one-dataset-out")
    parser.add_argument("training", nargs="+", help="training rows saved by `edgeindex router train --save`")
    parser.add_argument("--first-rule", action="store_true",
                        help="rank configurations by their own sets only, not by their family's stability")
    args = parser.parse_args()
    STABLE = not args.first_rule
    data = [d for p in args.training for d in T.load(p)]
    names = [d['dataset'] for d in data]
    print("sets", names, "best fixed NDCG@10", [round(best_fixed(d), 4) for d in data])
    table = {}
    for cfg in GRID:
        table[cfg] = loo(data, cfg)
        print(f"{cfg[0]:<20} {cfg[1]:<24} l2={cfg[2]:<6} c={cfg[3]:<5} LODO gain over best fixed "
              + " ".join(f"{g:+.4f}{'' if ok else '!'}" for g, ok in table[cfg]), flush=True)
    best = max(GRID, key=lambda cfg: key(cfg, table[cfg], table))
    print("\nchosen on all sets:", best)
    print("nested (the rule applied to the other sets only; the held-out set scored):")
    for h in data:
        rest = [d for d in data if d is not h]
        inner_table = {cfg: loo(rest, cfg) for cfg in GRID}
        inner = max(GRID, key=lambda cfg: key(cfg, inner_table[cfg], inner_table))
        m = fit(rest, inner)
        print(f"  {h['dataset']}: chose {inner}, auto {auto(m, h):.4f} ({auto(m, h, 'recall'):.4f}) "
              f"vs best fixed {best_fixed(h):.4f} ({best_fixed(h, 'recall'):.4f})", flush=True)
