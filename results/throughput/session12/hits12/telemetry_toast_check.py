"""Are the telemetry rows' results compressed by the toaster? (no timing here: pg_column_compression)"""
import json, random, sys, time
from pathlib import Path
import psycopg
sys.path.insert(0, "/work/wt-hits12")
from edgeindex.runtime.dev import EmbeddedPostgres
from edgeindex.routing.service import results_json, _json

pg = EmbeddedPostgres(Path("/tmp/hits12-pg/pgdata"))
uri = pg.start()
try:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS t")
        conn.execute("""CREATE TABLE t (search_id uuid PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
            scope_hash text NOT NULL, entity_ids text[] NOT NULL, query text NOT NULL, features json, requested text NOT NULL,
            strategy text NOT NULL, alpha float8 NOT NULL, shadow_strategy text, shadow_alpha float8, model_version bigint,
            results json NOT NULL, cache text NOT NULL, timings json NOT NULL)""")
        conn.execute("CREATE INDEX ON t (created_at)")
        import uuid
        rows = []
        for i in range(2000):
            rs = [{"chunk_id": str(random.randint(1, 12000)), "document_id": "msmarco-%d" % random.randint(1, 5000),
                   "entity_id": "load-agents", "score": round(random.random(), 6),
                   "scores": {"vector": round(random.random(), 6), "text": round(random.random(), 6),
                              "trigram": round(random.random(), 6)}} for _ in range(10)]
            rows.append((str(uuid.uuid4()), "a" * 64, ["load-agents"], "what is the weather like in paris in may", None, "",
                         "hybrid", 0.7, None, None, None, results_json(rs), "exact",
                         _json({"took_ms": 0.21})))
        print("results json length", sum(len(r[11]) for r in rows) / len(rows))
        with conn.cursor() as cur:
            with cur.copy("COPY t (search_id, scope_hash, entity_ids, query, features, requested, strategy, alpha, shadow_strategy, shadow_alpha, model_version, results, cache, timings) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row(r)
        print(conn.execute("SELECT pg_column_compression(results) c, count(*), avg(pg_column_size(t.*)) FROM t GROUP BY 1").fetchall())
finally:
    pg.stop()
