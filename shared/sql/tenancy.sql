-- name: key_by_hash
SELECT id, key_hash, is_admin, entity_ids FROM api_keys WHERE key_hash = %(hash)s AND revoked_at IS NULL;

-- name: ensure_admin
INSERT INTO api_keys (id, key_hash, name, is_admin)
VALUES (%(id)s, %(hash)s, 'deployment admin key', true)
ON CONFLICT (id) DO UPDATE SET key_hash = EXCLUDED.key_hash, is_admin = true, revoked_at = NULL;

-- name: create_key
INSERT INTO api_keys (id, key_hash, name, is_admin, entity_ids)
VALUES (%(id)s, %(hash)s, %(name)s, %(admin)s, %(entities)s);

-- name: revoke_key
UPDATE api_keys SET revoked_at = now() WHERE id = %(id)s AND revoked_at IS NULL AND id <> 'admin';

-- name: list_keys
SELECT id, name, is_admin, entity_ids, created_at, revoked_at FROM api_keys ORDER BY created_at;

-- name: create_entity
INSERT INTO entities (id, kind, name) VALUES (%(id)s, %(kind)s, %(name)s)
ON CONFLICT (id) DO NOTHING
RETURNING id, kind, name, created_at;

-- name: list_entities
SELECT id, kind, name, created_at FROM entities ORDER BY id;

-- name: existing_entities
SELECT id FROM entities WHERE id = ANY(%(ids)s);
