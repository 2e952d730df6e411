"""Document history: the versions a document had and what changed between them.

``retention`` is how much an entity keeps; ``writes`` records a new version inside the ingest
upsert's transaction and prunes what retention no longer covers; ``changes`` compares two
versions chunk by chunk (pure logic); ``service`` answers the routes. A search ``as_of`` a time
reads the same tables from ``search/as_of.py``.
"""
