-- A tool's name is any text up to 256 characters (shared/selection/definitions.py); each tool also
-- has an alias an LLM API takes as a function name (shared/selection/aliases.py), unique per entity.

ALTER TABLE tools DROP CONSTRAINT IF EXISTS tools_name_check;
ALTER TABLE tools ADD CONSTRAINT tools_name_length CHECK (length(name) BETWEEN 1 AND 256);

ALTER TABLE tools ADD COLUMN IF NOT EXISTS alias text;
-- the formula of aliases.alias_for for a name no other tool's alias holds
UPDATE tools
   SET alias = CASE WHEN name ~ '^[a-zA-Z0-9_-]{1,64}$' THEN name
                    ELSE left(regexp_replace(name, '[^a-zA-Z0-9_-]+', '_', 'g'), 55) || '_'
                         || left(encode(sha256(convert_to(name, 'UTF8')), 'hex'), 8) END
 WHERE alias IS NULL;
ALTER TABLE tools ALTER COLUMN alias SET NOT NULL;
ALTER TABLE tools ADD CONSTRAINT tools_alias_shape CHECK (alias ~ '^[a-zA-Z0-9_-]{1,64}$');
CREATE UNIQUE INDEX IF NOT EXISTS tools_entity_alias ON tools (entity_id, alias);
