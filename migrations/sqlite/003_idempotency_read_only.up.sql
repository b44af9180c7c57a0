-- Whether a key's action was annotated read-only when the key was reserved
-- (1 or 0), so that a read-only API key is refused the answers of any other
-- action under the key (its replay, and its 409s) whatever its tool has
-- become. NULL on rows reserved before this column: not known, and a
-- read-only key is refused only where the tool still says the action is not
-- read-only.
ALTER TABLE idempotency_keys ADD COLUMN read_only INTEGER;
