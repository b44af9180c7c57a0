-- A key's scope: 'full', or 'read' (read-only: it may read everything and
-- call only actions annotated read-only).
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'full';
