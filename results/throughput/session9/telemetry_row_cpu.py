"""The search worker's CPU per telemetry row, outside Postgres (ninth session, telemetry9): making the row
(Router.record: the results' five fields, three JSON encodings) and formatting it for COPY (psycopg's C
row writer), on the rows load_search's exact hits send (k 10, the fixed blend).

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/throughput/session9/telemetry_row_cpu.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import time
from pathlib import Path

from psycopg.adapt import Transformer
from psycopg._copy_base import TextFormatter

from edgeindex.routing.service import Router, RouterSettings

spec = importlib.util.spec_from_file_location("cost", Path(__file__).with_name("telemetry_pg_cost.py"))
cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cost)


class NoWriter:
    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.window = 0.2

    def enqueue(self, row):
        self.rows.append(row)
        return None


async def main() -> None:
    import orjson

    router = Router(None, RouterSettings())  # type: ignore[arg-type]
    router.telemetry_rows = NoWriter()  # type: ignore[assignment]
    rows = cost.make_rows(2000)
    hits = [{"results": [dict(r, position=0, start_char=0, end_char=90, document={"title": "t", "source": None,
                                                                                  "tags": []}, text="x" * 300)
                         for r in orjson.loads(row[11])]} for row in rows]
    made, formatted = [], []
    for _ in range(5):
        router.telemetry_rows.rows.clear()
        mark = time.process_time()
        for i, hit in enumerate(hits):
            router.record(f"00000000-0000-0000-0000-{i:012d}", entity_ids=["load"], scope_hash="3f1a9c0d2b7e4a61",
                          query="how long to boil an egg", decision=None, results=hit["results"], cache="exact",
                          timings={"took_ms": 0.4})
        made.append((time.process_time() - mark) / len(hits) * 1e6)
        formatter = TextFormatter(Transformer())
        mark = time.process_time()
        for row in router.telemetry_rows.rows:
            formatter.write_row(row)
        formatter.end()
        formatted.append((time.process_time() - mark) / len(hits) * 1e6)
    print(f"record (row made) us/row: {' '.join(f'{x:.1f}' for x in made)}; median {statistics.median(made):.1f}")
    print(f"COPY text formatting us/row: {' '.join(f'{x:.1f}' for x in formatted)}; "
          f"median {statistics.median(formatted):.1f}")


if __name__ == "__main__":
    asyncio.run(main())
