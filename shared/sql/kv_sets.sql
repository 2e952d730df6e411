-- The KV binding's sets (bindings/kv.py, DiskKV): SQLite, in the diskcache database file and run on
-- its connection, so a set's change is part of the same transaction as the KV's own writes.
-- One row per member: adding a member is one insert, never a read-modify-write of the whole set
-- (the exact cache adds its key to the set of every chunk an answer holds, at every store).
-- A member carries its own expiry; expired rows are deleted in batches (kv_sets_prune).

-- name: kv_sets_table
CREATE TABLE IF NOT EXISTS kv_set_members (
    name    TEXT NOT NULL,
    member  TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (name, member)
) WITHOUT ROWID

-- name: kv_sets_expiry_index
CREATE INDEX IF NOT EXISTS kv_set_members_expires ON kv_set_members (expires)

-- name: kv_sets_add
INSERT INTO kv_set_members (name, member, expires) VALUES (:name, :member, :expires)
ON CONFLICT (name, member) DO UPDATE SET expires = max(expires, excluded.expires)

-- name: kv_sets_pop
DELETE FROM kv_set_members WHERE name = :name RETURNING member, expires

-- name: kv_sets_members
SELECT member FROM kv_set_members WHERE name = :name AND expires > :now

-- name: kv_sets_prune
DELETE FROM kv_set_members WHERE expires <= :now

-- name: kv_sets_rows
SELECT count(*) FROM kv_set_members WHERE substr(name, 1, length(:prefix)) = :prefix
