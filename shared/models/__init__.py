"""Embedding models of one deployment: the serving model, and a second model's vectors beside it.

``backfill`` embeds every stored chunk (or an entity's) with another model and writes the vectors
to ``chunk_vectors`` with the model's id and dimension: the stored chunks are reused (nothing is
re-chunked), the work is throttled to a share of the time so searches keep their latency, and a
backfill stopped or killed goes on from what it finished. ``edgeindex models`` is its command.
"""
