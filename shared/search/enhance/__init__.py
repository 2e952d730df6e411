"""Query enhancement: what the search adds to a query before it retrieves.

- ``prf``: pseudo-relevance feedback (RM3-style) from the tenant's own chunks, offline;
- ``synonyms``: an LLM's alternative words, OR-ed into the full-text query at a lower weight;
- ``hyde``: an LLM's hypothetical answer, embedded and blended with the query vector.

Each runs behind a gate on the first pass's evidence (``gates.py``), LLM calls within a time
budget and through a cache (``llm.py``). The search service calls :class:`QueryEnhancer` once,
between the first (lexical) pass and retrieval (``SearchService.enhance``).
"""

from .service import Enhancement, EnhanceSettings, QueryEnhancer

__all__ = ["EnhanceSettings", "Enhancement", "QueryEnhancer"]
