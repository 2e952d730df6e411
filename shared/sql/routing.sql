-- The router's versions, telemetry and feedback (infra/migrations/0009_router.sql).

-- name: active_models
-- the serving version of the deployment and of every entity override
SELECT a.scope, m.version, m.weights, m.base
FROM router_active a JOIN router_models m ON m.version = a.version;

-- name: active_model
SELECT m.version, m.weights, m.base, m.source, m.parent, m.created_at
FROM router_active a JOIN router_models m ON m.version = a.version
WHERE a.scope = %(scope)s;

-- name: insert_model
INSERT INTO router_models (scope, weights, source, parent, base, note)
VALUES (%(scope)s, %(weights)s, %(source)s, %(parent)s, %(base)s, %(note)s)
RETURNING version;

-- name: activate
INSERT INTO router_active (scope, version) VALUES (%(scope)s, %(version)s)
ON CONFLICT (scope) DO UPDATE SET version = excluded.version, changed_at = now();

-- name: model
SELECT version, scope, weights, source, parent, base, note, created_at FROM router_models WHERE version = %(version)s;

-- name: versions
SELECT m.version, m.scope, m.source, m.parent, m.base, m.note, m.created_at,
       (a.version IS NOT NULL) AS active
FROM router_models m LEFT JOIN router_active a ON a.version = m.version
WHERE m.scope = %(scope)s
ORDER BY m.version DESC
LIMIT %(limit)s;

-- name: copy_telemetry
-- the grouped path (routing/telemetry_writer.py): one COPY per group, columns in this order
COPY search_telemetry (search_id, scope_hash, entity_ids, query, features, requested, strategy, alpha,
                       shadow_strategy, shadow_alpha, model_version, results, cache, timings, key_id) FROM STDIN;

-- name: prune_telemetry
DELETE FROM search_telemetry WHERE created_at < now() - make_interval(days => %(days)s);

-- name: telemetry
SELECT search_id, created_at, scope_hash, entity_ids, query, features, requested, strategy, alpha,
       shadow_strategy, shadow_alpha, model_version, results, cache, timings, key_id
FROM search_telemetry WHERE search_id = %(search_id)s;

-- name: insert_feedback
-- nothing when the search has feedback already (router_feedback_search, migration 0023)
INSERT INTO router_feedback (search_id, scope, useful, not_useful, rewards, steps_model)
VALUES (%(search_id)s, %(scope)s, %(useful)s, %(not_useful)s, %(rewards)s, %(steps_model)s)
ON CONFLICT (search_id) DO NOTHING
RETURNING id;

-- name: pending_feedback
-- feedback not yet applied to a scope's model, with the features of its search
SELECT f.id, f.rewards, t.features, t.key_id
FROM router_feedback f JOIN search_telemetry t ON t.search_id = f.search_id
WHERE f.scope = %(scope)s AND f.applied_in IS NULL AND f.steps_model AND t.features IS NOT NULL
ORDER BY f.id;

-- name: mark_applied
UPDATE router_feedback SET applied_in = %(version)s WHERE id = ANY(%(ids)s::bigint[]);

-- name: report_rows
SELECT search_id, created_at, requested, strategy, alpha, shadow_strategy, shadow_alpha, model_version,
       cache, timings, features
FROM search_telemetry
WHERE created_at >= now() - make_interval(days => %(days)s)
ORDER BY created_at DESC
LIMIT %(limit)s;

-- name: report_feedback
SELECT f.rewards, t.strategy, t.alpha, t.shadow_strategy, t.shadow_alpha
FROM router_feedback f JOIN search_telemetry t ON t.search_id = f.search_id
WHERE f.created_at >= now() - make_interval(days => %(days)s);
