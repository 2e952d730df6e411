"""Tools: the request embedded without its values (numbers, quoted strings), BM25 unchanged (offline)."""
import asyncio, re, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl

NUM = re.compile(r"[-+$€£]?\d[\d,./:%x^-]*\w*")
QUOTED = re.compile(r"'[^']{1,60}'|\"[^\"]{1,60}\"")

def clean(text, mode):
    if "q" in mode: text = QUOTED.sub(" ", text)
    if "n" in mode: text = NUM.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip() or text

mode = sys.argv[1]
orig = tl.embed_texts
async def embed_texts(embedder, texts):
    return await orig(embedder, [clean(t, mode) for t in texts])
tl.embed_texts = embed_texts
sys.argv = [sys.argv[0], "--tools", "../shared/data/tools-bfcl"]
ts.main()
