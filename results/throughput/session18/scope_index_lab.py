"""Does a covering index make the search statement's scope check (`docs`) cheaper? pg_stat_statements
over wrk-driven uncached searches, as session17/pg_statements.py (which this runs), with `--index`
creating documents (entity_id, id) INCLUDE (chunk_count) WHERE ready_version IS NOT NULL after the
load. Both arms VACUUM ANALYZE documents and chunks after the load.

  .venv/bin/python results/throughput/session18/scope_index_lab.py [--index] [--agents 1,8]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session17"))

import pg_statements  # noqa: E402


def main() -> int:
    parser = pg_statements.arguments()
    parser.add_argument("--index", action="store_true")
    args = parser.parse_args()

    def prepare(dsn: str) -> None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            if args.index:
                conn.execute("CREATE INDEX documents_scope_idx ON documents (entity_id, id) "
                             "INCLUDE (chunk_count) WHERE ready_version IS NOT NULL")
            conn.execute("VACUUM ANALYZE documents")
            conn.execute("VACUUM ANALYZE chunks")
        print(f"index: {args.index}")

    return pg_statements.run(args, after_load=prepare)


if __name__ == "__main__":
    sys.exit(main())
