ALTER TABLE idempotency_keys DROP COLUMN read_only;
