"""Pairwise learned fusion (RankSVM-style logistic regression on feature differences of a needed tool and a
not-needed one, both in the whole request's first 10), fit on the tuning half only."""
import sys
sys.path.insert(0, "results/selection/session8")
from ltr import *

COLS = {"vz+bz": [1, 2], "vz+bz+sent": [1, 2, 4], "+name": [1, 2, 6, 7], "+param": [1, 2, 8], "+desc": [1, 2, 9],
        "all": [1, 2, 4, 6, 7, 8, 9]}

def pairs(part, depth=10):
    X, y = [], []
    for d in DATA:
        if d["split"] != part: continue
        f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")[:depth]
        F = feats(d, order); exp = set(d["q"]["expected"])
        pos = [j for j, i in enumerate(order) if NAMES[i] in exp]; neg = [j for j, i in enumerate(order) if NAMES[i] not in exp]
        for a in pos:
            for b in neg:
                X.append(F[a] - F[b]); y.append(1); X.append(F[b] - F[a]); y.append(0)
    return np.asarray(X), np.asarray(y)

class Lin:
    def __init__(self, w): self.w = w
    def decision_function(self, X): return X @ self.w

if __name__ == "__main__":
    X, y = pairs("tune")
    print(X.shape)
    print("base", score(baseline, ("tune",)))
    for nm, cols in COLS.items():
        for C in (0.01, 1.0):
            m = LogisticRegression(C=C, fit_intercept=False, max_iter=3000).fit(X[:, cols], y)
            print(nm, C, score(reranked, ("tune",), model=Lin(m.coef_[0]), cols=cols), np.round(m.coef_[0], 3).tolist())
