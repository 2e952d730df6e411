"""edgeindex: multi-tenant hybrid search for AI agents (the library behind the workers)."""

__version__ = "0.1.0"
