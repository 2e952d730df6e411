"""Print the tuning half's misses: request, expected, what was chosen."""
import asyncio, sys
sys.path.insert(0, "results/selection/session8")
from common import *

async def main():
    emb, db, queries, defs = await setup()
    res, out = await evaluate(emb, db, queries, part=sys.argv[1] if len(sys.argv) > 1 else "tune")
    print(res)
    for r, a, q, got in sum(out.values(), []):
        if r < 1:
            print("\n#", q["id"], q["query"][:600]); print("  expected", q["expected"]); print("  got     ", got)
    emb.save()
asyncio.run(main())
