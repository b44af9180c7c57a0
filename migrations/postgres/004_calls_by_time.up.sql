-- The call log is listed in the order calls began (created_at, then id),
-- not in the order its rows were written.
DROP INDEX calls_account_tool;
DROP INDEX calls_account;
CREATE INDEX calls_account_time ON calls (account_id, created_at, id);
CREATE INDEX calls_account_tool_time ON calls (account_id, tool_id, created_at, id);
