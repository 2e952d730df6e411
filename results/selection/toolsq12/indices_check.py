"""scripts/tune_select.py --indices (databases, then tables) on this branch, with its own vector cache."""
import sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
ts.CACHE = Path("/tmp/toolsq12-idx.pkl")
for extra in ([], ["--tables"]):
    sys.argv = ["tune_select.py", "--indices", "../shared/data/indices-spider", *extra]
    ts.main()
