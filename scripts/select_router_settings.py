"""Choose the router fit's decision, features, bins and L2 by leave-one-dataset-out, with a nested check.

The rows are every development set under every embedding model collected (``edgeindex router train
--save``, once per model). A dataset is held out with all its models' rows; the model fitted on the
other datasets scores each of them. A configuration's score on a held-out (dataset, model) is the gain
of ``auto`` (NDCG@10) over the best fixed mode a user could pick instead (text, the fixed blend 0.8,
vector), and whether it is at least that mode on NDCG@10 AND Recall@10.

The rule: the most held-out sets at or above their best fixed mode, then the worst gain, then the
mean gain, then the fewest parameters, then the larger L2 (the model nearer the single best blend,
safer on sets unlike these). Nested: for each dataset the rule is applied to leave-one-out over the
other datasets only, and the configuration it picks (fitted on them) scores the held-out one, so no
choice is judged on the set it was made on.

usage: python scripts/select_router_settings.py TRAINING.json [...] [--quick]
"""
import argparse
import itertools

import numpy as np
from edgeindex.evaluation import router_training as T
from edgeindex.routing.features import NAMES

QUERY = ('length', 'short', 'digit_share', 'identifier_share', 'quoted', 'question')
EVID = ('matched_share', 'rare_share', 'best_idf', 'bm25_best', 'bm25_gap', 'lexical_hits')
LANG = ('query_language_unknown', 'scope_language_unknown')
PROBE = ('probe_cosine', 'probe_spread')
FEATURES = {'lang': LANG, 'lang+query': LANG + QUERY, 'lang+evid': LANG + EVID, 'lang+probe': LANG + PROBE,
            'lang+probe+evid': LANG + PROBE + EVID, 'lang+query+evid': LANG + QUERY + EVID,
            'lang+query+probe+evid': LANG + QUERY + PROBE + EVID, 'all': tuple(NAMES)}
BINS = {'text,vector': (("text", 0.0), ("vector", 1.0)),
        'text,0.5,vector': (("text", 0.0), ("hybrid-0.5", 0.5), ("vector", 1.0)),
        'text,0.2,0.8,vector': (("text", 0.0), ("hybrid-0.2", 0.2), ("hybrid-0.8", 0.8), ("vector", 1.0))}
GRID = ([("alpha", f, b, l2) for f in FEATURES for b in ('text,vector', 'text,0.5,vector')
         for l2 in (1e-3, 1e-2, 1e-1, 1.0)]
        + [("bin", f, 'text,0.2,0.8,vector', l2) for f in FEATURES for l2 in (1e-3, 1e-2)])


def fit(sets, cfg):
    decision, f, b, l2 = cfg
    return T.fit(sets, features=FEATURES[f], bins=BINS[b], l2=l2, decision=decision)


def held_out(sets, cfg):
    """(gain over the best fixed mode, at least that mode on both metrics) per held-out (dataset, model)."""
    out = []
    for name in dict.fromkeys(d['dataset'] for d in sets):
        model = fit([d for d in sets if d['dataset'] != name], cfg)
        for data in (d for d in sets if d['dataset'] == name):
            s = T.score(model, data)
            fixed = [s[n] for n in T.FIXED]
            best_ndcg = max(f['ndcg@10'] for f in fixed)
            best_recall = max(f['recall@10'] for f in fixed)
            gain = s['auto']['ndcg@10'] - best_ndcg
            out.append((gain, gain >= -0.005 and s['auto']['recall@10'] >= best_recall - 0.005))
    return out


def key(cfg, result):
    gains = [g for g, _ in result]
    size = len(FEATURES[cfg[1]]) * len(BINS[cfg[2]])
    return (sum(ok for _, ok in result), round(min(gains), 4), round(float(np.mean(gains)), 4), -size, cfg[3])


def report(sets, cfg):
    """The chosen configuration, held out: per set auto against our fixed modes and the oracle, the
    mix; then the means, against the best single alpha over all sets (one configuration for all)."""
    lines = ["| held-out set | auto | text | blend 0.8 | vector | oracle | regret | mix | off modal |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    autos = []
    for name in dict.fromkeys(d['dataset'] for d in sets):
        model = fit([d for d in sets if d['dataset'] != name], cfg)
        for data in (d for d in sets if d['dataset'] == name):
            s = T.score(model, data)
            autos.append(s['auto']['ndcg@10'])
            lines.append(f"| {label(data)} | {s['auto']['ndcg@10']:.4f} | " + " | ".join(
                f"{s[n]['ndcg@10']:.4f}" for n in T.FIXED) + f" | {s['oracle']['ndcg@10']:.4f} | {s['regret']:.3f} | "
                f"{s['mix']} | {s['off_modal']:.2f} |")
    names = [b['name'] for b in sets[0]['bins']]
    single = {n: float(np.mean([np.mean([r['ndcg'][n] for r in d['rows'].values()]) for d in sets])) for n in names}
    top = max(single, key=single.get)
    lines.append(f"mean over {len(autos)} sets: auto {np.mean(autos):.4f}; best single configuration {top} "
                 f"{single[top]:.4f} ({np.mean(autos) / single[top] - 1:+.2%}); text {single['text']:.4f}, "
                 f"blend 0.8 {single['hybrid-0.8']:.4f}, vector {single['vector']:.4f}")
    return "\n".join(lines)


def label(data):
    return f"{data['dataset']}/{data['model']}" if data.get('model') else data['dataset']


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="choose the router fit's settings by leave-one-dataset-out")
    parser.add_argument("training", nargs="+", help="training rows saved by `edgeindex router train --save`")
    parser.add_argument("--quick", action="store_true", help="skip the nested check")
    args = parser.parse_args()
    data = [d for p in args.training for d in T.load(p)]
    names = list(itertools.chain.from_iterable(
        [label(d) for d in data if d['dataset'] == n] for n in dict.fromkeys(d['dataset'] for d in data)))
    print("held-out sets:", " ".join(names))
    table = {}
    for cfg in GRID:
        table[cfg] = held_out(data, cfg)
        print(f"{cfg[0]:<5} {cfg[1]:<22} {cfg[2]:<20} l2={cfg[3]:<6} gain over best fixed "
              + " ".join(f"{g:+.4f}{'' if ok else '!'}" for g, ok in table[cfg])
              + f"  mean {np.mean([g for g, _ in table[cfg]]):+.4f}", flush=True)
    best = max(GRID, key=lambda cfg: key(cfg, table[cfg]))
    print("\nchosen on all sets:", best)
    print(report(data, best))
    if not args.quick:
        print("nested (the rule applied to the other datasets only; the held-out dataset scored):")
        for name in dict.fromkeys(d['dataset'] for d in data):
            rest = [d for d in data if d['dataset'] != name]
            inner = max(GRID, key=lambda cfg: key(cfg, held_out(rest, cfg)))
            model = fit(rest, inner)
            for h in (d for d in data if d['dataset'] == name):
                s = T.score(model, h)
                print(f"  {label(h)}: chose {inner}, auto {s['auto']['ndcg@10']:.4f} ({s['auto']['recall@10']:.4f}) "
                      f"gain over best fixed {s['gain_over_best_fixed']:+.4f}, regret {s['regret']:.3f}", flush=True)
