"""Text cut to a length for reading (summaries, snippets): at a sentence end near the limit, else
at a word boundary, never inside a word, and with an ellipsis whenever something was cut.

Chinese, Japanese, Thai and the other scripts written without spaces have no word boundary to
look for: they are cut after 。！？ near the limit, else between any two characters (never before
a combining mark). A single word longer than half the room is the only thing ever cut inside.
"""

from __future__ import annotations

import re
import unicodedata

from .language import UNSPACED_SCRIPTS

ELLIPSIS = "…"
# A sentence end counts as near when it keeps at least this share of the room: a summary of whole
# sentences then loses only its last, unfinished one. Else a word boundary, down to half the room.
SENTENCE_SHARE = 2 / 3
WORD_SHARE = 1 / 2

_CLOSING = "\"'”’)]」』）"
_WIDE_ENDS = "。！？｡"
_SENTENCE_END = re.compile(rf"[.!?][{re.escape(_CLOSING)}]*(?=\s)|[{_WIDE_ENDS}][{re.escape(_CLOSING)}]*")
_UNSPACED = re.compile(f"[{UNSPACED_SCRIPTS}]")


def _boundary(text: str, at: int) -> bool:
    """Whether ``text`` may be cut before ``text[at]`` without cutting a word."""
    before, after = text[at - 1], text[at]
    if unicodedata.combining(after):
        return False
    return (before.isspace() or after.isspace() or bool(_UNSPACED.match(before))
            or bool(_UNSPACED.match(after)))


def shorten(text: str, limit: int, *, ellipsis: str = ELLIPSIS) -> str:
    """``text`` stripped, and if longer than ``limit`` characters cut to at most ``limit`` with ``ellipsis``."""
    text = text.strip()
    if len(text) <= limit:
        return text
    room = limit - len(ellipsis) - 1  # one for the space between a sentence's end and the ellipsis
    if room < 2:
        return text[:max(0, limit - len(ellipsis))] + ellipsis
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, room + 1) if m.end() <= room]
    if ends and ends[-1] >= room * SENTENCE_SHARE:
        cut = text[:ends[-1]]
        wide = cut.rstrip(_CLOSING)[-1:] in _WIDE_ENDS  # a full-width stop takes no space after it
        return cut + ("" if wide else " ") + ellipsis
    at = next((i for i in range(room, int(room * WORD_SHARE), -1) if _boundary(text, i)), None)
    if at is None:  # one word fills the room
        at = next((i for i in range(room, 0, -1) if not unicodedata.combining(text[i])), room)
    return text[:at].rstrip() + ellipsis
