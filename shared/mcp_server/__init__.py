"""The MCP server: tools over the same services and request models as the HTTP workers
(``tools.py``), served over streamable HTTP by ``workers/mcp.py`` and over stdio by
``edgeindex mcp`` (``stdio.py``, a thin bridge to the HTTP worker)."""
