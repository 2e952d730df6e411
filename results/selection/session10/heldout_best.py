"""Held-out halves, looked at once, for the settings that gained on the tuning half (>= 1 tool):
BM25 name leaf again x3 and b 1.0 (bm25_fields.py), leaf family w 0.5 and either w 0.5 (family.py).
  nice -n 15 .venv/bin/python results/selection/session10/heldout_best.py"""
import sys
sys.argv = [sys.argv[0], "both"]
sys.path.insert(0, "results/selection/session10")
import bm25_fields, family
bm25_fields.variant("select's fields (reproduces)")
bm25_fields.variant("BM25 name's leaf again x3", leaf=3.0)
bm25_fields.variant("BM25 b 1.0", b=1.0)
bm25_fields.variant("BM25 name 2.0", name=2.0)
family.variant("family leaf w 0.5", kind="leaf", w=0.5)
family.variant("family either w 0.5", kind="either", w=0.5)
