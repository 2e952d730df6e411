-- Model changes asked for through the admin API (`POST /admin/api/models/jobs`), run by an ingest
-- worker (shared/models/jobs.py): a backfill, a migration (backfill, then cutover), a cutover or a
-- rollback. The row is the job's record: an ingest worker claims a queued job, or one whose runner
-- stopped renewing its lease (killed), and runs it from where the stored vectors say it is; a
-- backfill stops between batches once `stop_requested` is set.
CREATE TABLE model_jobs (
    id              bigserial PRIMARY KEY,
    action          text NOT NULL CHECK (action IN ('backfill', 'migrate', 'cutover', 'rollback')),
    model_id        text NOT NULL,            -- the model embedded with (a rollback's: the one it returns to)
    duty            real NOT NULL CHECK (duty > 0 AND duty <= 1),
    state           text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'done', 'stopped', 'failed')),
    stop_requested  boolean NOT NULL DEFAULT false,
    attempts        integer NOT NULL DEFAULT 0,  -- claims: more than one means a runner was lost
    lease_until     timestamptz,
    result          jsonb,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz
);
-- At most one job queued or running: two would race over the serving model.
CREATE UNIQUE INDEX model_jobs_one_active ON model_jobs ((true)) WHERE state IN ('queued', 'running');
