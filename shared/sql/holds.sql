-- Hold points (shared/holds.py): a test holds the exclusive lock; a worker passing the point
-- waits for it with a shared one and lets go at once.

-- name: pass_point
SELECT pg_advisory_lock_shared(hashtextextended(%(point)s, 0));

-- name: leave_point
SELECT pg_advisory_unlock_shared(hashtextextended(%(point)s, 0));

-- name: hold
SELECT pg_advisory_lock(hashtextextended(%(point)s, 0));

-- name: release
SELECT pg_advisory_unlock(hashtextextended(%(point)s, 0));

-- name: waiting
-- Sessions waiting at the point (a lock not granted on its key).
SELECT count(*) AS n FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%(point)s, 0);
