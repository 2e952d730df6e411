"""Sweep selection constants offline: `sweep.py NAME=VALUE ...` (module constants of selection.tools/scoring; a
constant read as a default argument at import, such as scoring.ALPHA, is not changed by this)."""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import tools as tl, scoring as sc

for arg in sys.argv[1:]:
    name, value = arg.split("=")
    mod = tl if hasattr(tl, name) else sc
    setattr(mod, name, type(getattr(mod, name))(value))
    print("set", mod.__name__, name, value)
emb = ts.MemoEmbedder()
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), emb, False))
