-- name: try_lock
SELECT pg_try_advisory_lock(hashtextextended('workflow:' || %(id)s, 0)) AS locked;

-- name: unlock
SELECT pg_advisory_unlock(hashtextextended('workflow:' || %(id)s, 0));

-- name: start_run
INSERT INTO workflow_runs (id, workflow, params, status, attempts)
VALUES (%(id)s, %(workflow)s, %(params)s, 'running', 1)
ON CONFLICT (id) DO UPDATE
SET attempts = workflow_runs.attempts + 1,
    status = CASE WHEN workflow_runs.status = 'complete' THEN 'complete' ELSE 'running' END,
    updated_at = now()
RETURNING status, attempts;

-- name: completed_steps
SELECT name, output FROM workflow_steps WHERE run_id = %(run)s ORDER BY seq;

-- name: set_current_step
UPDATE workflow_runs SET current_step = %(step)s, updated_at = now() WHERE id = %(id)s;

-- name: record_step
INSERT INTO workflow_steps (run_id, name, seq, output, attempts)
VALUES (%(run)s, %(name)s, %(seq)s, %(output)s, %(attempts)s)
ON CONFLICT (run_id, name) DO NOTHING;

-- name: finish_run
UPDATE workflow_runs
SET status = %(status)s, error = %(error)s, updated_at = now(),
    current_step = CASE WHEN %(status)s = 'complete' THEN NULL ELSE current_step END
WHERE id = %(id)s;

-- name: get_run
SELECT id, status, current_step, error, attempts FROM workflow_runs WHERE id = %(id)s;

-- The same statements for many runs at once (workflow_writes.GroupCommit merges a group commit's statements
-- of one kind into one): each parameter is an array, one element per run, in the single form's order.

-- name: start_runs
INSERT INTO workflow_runs (id, workflow, params, status, attempts)
SELECT r.id, r.workflow, r.params, 'running', 1
FROM unnest(%(id)s::text[], %(workflow)s::text[], %(params)s::jsonb[]) AS r(id, workflow, params)
ON CONFLICT (id) DO UPDATE
SET attempts = workflow_runs.attempts + 1,
    status = CASE WHEN workflow_runs.status = 'complete' THEN 'complete' ELSE 'running' END,
    updated_at = now()
RETURNING id AS _key, status, attempts;

-- name: set_current_steps
UPDATE workflow_runs r SET current_step = s.step, updated_at = now()
FROM unnest(%(id)s::text[], %(step)s::text[]) AS s(id, step)
WHERE r.id = s.id;

-- name: record_steps
INSERT INTO workflow_steps (run_id, name, seq, output, attempts)
SELECT * FROM unnest(%(run)s::text[], %(name)s::text[], %(seq)s::integer[], %(output)s::jsonb[],
                     %(attempts)s::integer[])
ON CONFLICT (run_id, name) DO NOTHING;

-- name: finish_runs
UPDATE workflow_runs r
SET status = f.status, error = f.error, updated_at = now(),
    current_step = CASE WHEN f.status = 'complete' THEN NULL ELSE r.current_step END
FROM unnest(%(id)s::text[], %(status)s::text[], %(error)s::text[]) AS f(id, status, error)
WHERE r.id = f.id;

-- name: lock_and_unlock
-- Several runs' locks and unlocks in one round trip, in the order asked (run_locks.RunLocks).
SELECT CASE WHEN r.take THEN pg_try_advisory_lock(hashtextextended('workflow:' || r.id, 0))
            ELSE pg_advisory_unlock(hashtextextended('workflow:' || r.id, 0)) END AS done
FROM unnest(%(id)s::text[], %(take)s::boolean[]) WITH ORDINALITY AS r(id, take, n)
ORDER BY r.n;
