"""Ideas that were flat before, again on top of the leaf field (x5), tuning half only.
  nice -n 15 .venv/bin/python results/selection/session10/on_leaf.py"""
import sys
sys.path.insert(0, "results/selection/session10")
import bm25_fields as b
b.variant("leaf x5 (kept)", leaf=5.0)
for bb in (0.9, 1.0): b.variant(f"leaf x5, b {bb}", leaf=5.0, b=bb)
for k1 in (1.5, 2.0): b.variant(f"leaf x5, k1 {k1}", leaf=5.0, k1=k1)
for n in (2.0, 4.0): b.variant(f"leaf x5, name {n}", leaf=5.0, name=n)
for a in (0.5, 0.55, 0.65, 0.7): b.variant(f"leaf x5, alpha {a}", leaf=5.0, alpha=a)
for p in (0.2, 0.5): b.variant(f"leaf x5, param descriptions {p}", leaf=5.0, pdesc=p)
