-- The admin page's overview: every tenant with its documents counted by status and its active keys.

-- name: overview
SELECT e.id, e.kind, e.name, e.created_at,
       count(d.id) FILTER (WHERE d.status = 'pending')    AS pending,
       count(d.id) FILTER (WHERE d.status = 'processing') AS processing,
       count(d.id) FILTER (WHERE d.status = 'ready')      AS ready,
       count(d.id) FILTER (WHERE d.status = 'failed')     AS failed,
       (SELECT count(*) FROM api_keys k
         WHERE e.id = ANY(k.entity_ids) AND k.revoked_at IS NULL) AS keys
FROM entities e
LEFT JOIN documents d ON d.entity_id = e.id
GROUP BY e.id
ORDER BY e.id;
