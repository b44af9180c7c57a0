DROP INDEX IF EXISTS oauth_states_tool_version_idx;
ALTER TABLE oauth_states DROP COLUMN step_index;
ALTER TABLE oauth_states DROP COLUMN tool_version;
ALTER TABLE oauth_states DROP COLUMN sealed_state;
