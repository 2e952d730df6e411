"""Adaptive retrieval: a router that picks keyword, vector or hybrid (with an alpha) per query.

features.py  cheap query and first-pass features (well under a millisecond)
model.py     the learned model: a softmax over strategy bins, weights printable; fit and bounded updates
store.py     versions in Postgres (per deployment, optional per-entity overrides), rollback
service.py   the router as the search pipeline uses it: decide, telemetry, feedback
report.py    what happened: strategy mix, regret, latency (``summary(db)`` as JSON, PNG charts)
train.py     ``edgeindex router train``: per-query NDCG of every bin through the real stack, then fit
cli.py       ``edgeindex router train | show | rollback | report``
"""
