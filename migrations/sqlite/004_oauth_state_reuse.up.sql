-- A tool's oauth step hands out one authorization link for a while instead
-- of a new one per read: a state keeps its plaintext sealed (AES-256-GCM,
-- like its PKCE verifier, so a leaked row still cannot complete an
-- authorization) to build the same URL again, and names the tool's version
-- and step it was made for, so that a reset or a reconfiguration (each
-- bumps the version) never hands out a link of the configuration before.
-- Rows made before these columns have no sealed state and version 0: they
-- are never handed out again, and still complete their callback.
ALTER TABLE oauth_states ADD COLUMN sealed_state TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_states ADD COLUMN tool_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE oauth_states ADD COLUMN step_index INTEGER NOT NULL DEFAULT 0;
-- The read's one lookup (a tool's freshest state for its version and step),
-- and every per-tool deletion of states.
CREATE INDEX oauth_states_tool_version_idx ON oauth_states (tool_id, tool_version, step_index, expires_at);
