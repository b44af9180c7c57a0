DROP INDEX calls_account_tool_time;
DROP INDEX calls_account_time;
CREATE INDEX calls_account_tool ON calls (account_id, tool_id, id);
CREATE INDEX calls_account ON calls (account_id, id);
