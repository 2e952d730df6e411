-- The ingest reconciler (shared/ingest/reconciler.py): versions whose queue message never reached a consumer.

-- name: try_sweep_lock
-- One sweeper at a time across the ingest processes (a session lock, let go at the end of the sweep).
SELECT pg_try_advisory_lock(hashtextextended('reconciler:ingest', 0)) AS locked;

-- name: sweep_unlock
SELECT pg_advisory_unlock(hashtextextended('reconciler:ingest', 0));

-- name: stale_versions
-- After the cursor (entity, id), in key order, at most %(limit)s versions:
-- - pending with no run, stored (uploaded_at) before the bound or not known to be stored yet (a presigned
--   PUT: its event sets uploaded_at; the caller HEADs the object and reads its age there);
-- - processing whose run has not moved (its step entered, its checkpoint, its finish) for the lease and
--   whose advisory lock no session holds: the run stopped and nothing is left to resume it.
-- A run's lock key is workflow.sql's try_lock: hashtextextended('workflow:' || id, 0). Postgres shows a
-- bigint advisory lock in pg_locks as its high half (classid) and low half (objid) with objsubid 1.
WITH held AS MATERIALIZED (
    SELECT (l.classid::bigint << 32) | l.objid::bigint AS key
    FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
)
SELECT d.entity_id, d.id AS document_id, d.version, d.object_key, d.status, d.uploaded_at,
       r.updated_at AS run_moved_at, extract(epoch FROM now() - r.updated_at)::float8 AS run_idle_s,
       extract(epoch FROM now() - d.uploaded_at)::float8 AS uploaded_s
FROM documents d
LEFT JOIN workflow_runs r ON r.id = d.run_id
WHERE d.status IN ('pending', 'processing') AND d.object_key <> ''
  AND (d.entity_id, d.id) > (%(after_entity)s, %(after_id)s)
  AND CASE
        WHEN d.status = 'pending' THEN
            d.uploaded_at IS NULL OR d.uploaded_at < now() - make_interval(secs => %(after)s)
        ELSE
            coalesce(r.status, 'running') <> 'complete'
            AND coalesce(r.updated_at, d.uploaded_at, d.updated_at) < now() - make_interval(secs => %(lease)s)
            AND (d.run_id IS NULL
                 OR hashtextextended('workflow:' || d.run_id, 0) NOT IN (SELECT key FROM held))
      END
ORDER BY d.entity_id, d.id
LIMIT %(limit)s;
