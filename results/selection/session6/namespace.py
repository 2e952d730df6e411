"""Experiment: a dotted tool name's namespace words (``geometry.`` in ``geometry.area_circle``) weigh PW in BM25,
its leaf keeps 3.0."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.text import Field, split_identifier

PW = float(os.environ.get("PW", "1.5"))
orig = tl._fields
def fields(row):
    out = orig(row)
    name = row["name"]
    if "." in name:
        prefix, leaf = name.rsplit(".", 1)
        out = [Field(" ".join(split_identifier(leaf)), 3.0), Field(" ".join(split_identifier(prefix)), PW)] + out[1:]
    return out
tl._fields = fields
print("PW", PW)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
