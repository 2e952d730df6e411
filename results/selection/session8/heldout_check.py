"""Held-out, once: the two tuning-half ties/gains (picks ordered by their sentence's fused z; the pairwise fusion
with name and leaf coverage, C 1.0, fit on the tuning half)."""
import sys
sys.path.insert(0, "results/selection/session8")
from ltr2 import *
import pick_order as exp3
X, y = pairs("tune"); cols = COLS["+name"]
m = LogisticRegression(C=1.0, fit_intercept=False, max_iter=3000).fit(X[:, cols], y)
print("base", score(baseline))
print("pairwise +name", score(reranked, model=Lin(m.coef_[0]), cols=cols))
print("picks by fused z", score(exp3.alloc, key="fz"))
