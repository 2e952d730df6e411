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
