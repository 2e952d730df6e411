"""Neighbours of the one setting that held on both halves (BM25 name's leaf again x3): is it a plateau
or a lucky point? And where the effect comes from (the leaf of dotted names only; the whole name
weighted more). Both halves printed (the held-out half of x3 was already looked at). leaf_sweep.txt.
  nice -n 15 .venv/bin/python results/selection/session10/leaf_sweep.py"""
import sys
sys.argv = [sys.argv[0], "both"]
sys.path.insert(0, "results/selection/session10")
import bm25_fields
for v in (2.5, 3.5, 4.0, 5.0, 6.0):
    bm25_fields.variant(f"BM25 name's leaf again x{v}", leaf=v)
for v in (2.0, 3.0):
    bm25_fields.variant(f"leaf x{v}, name field 2.0", leaf=v, name=2.0)
for v in (8.0, 10.0, 15.0):
    bm25_fields.variant(f"BM25 name's leaf again x{v}", leaf=v)
for v in (3.0, 5.0, 10.0):
    bm25_fields.variant(f"leaf again x{v}, dotted names only", leaf=v, dotted_only=True)
for v in (5.0, 8.0, 13.0):
    bm25_fields.variant(f"whole name field {v} (no leaf field)", name=v)
