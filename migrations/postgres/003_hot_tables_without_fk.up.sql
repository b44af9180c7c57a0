-- The two tables every call writes lose their foreign key to accounts.
-- Each insert checked it by taking a KEY SHARE lock on the account's row:
-- one more heap write and WAL record per call, and, with concurrent calls
-- of one account, a multixact on that row. Their account_id always comes
-- from an authenticated API key, and accounts are never deleted; expired
-- idempotency keys are purged and the call log is append-only.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_account_id_fkey;
ALTER TABLE calls DROP CONSTRAINT calls_account_id_fkey;
