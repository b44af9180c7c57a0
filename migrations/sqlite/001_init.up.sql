CREATE TABLE accounts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- API keys are stored only as SHA-256 hashes.
CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_hash   TEXT NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    revoked_at DATETIME
);

-- A connected tool. config holds plain values as JSON; secrets and
-- oauth_token are sealed with AES-256-GCM. version changes with every
-- configuration or token change, so caches can tell a stale copy.
CREATE TABLE tools (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    catalog_name TEXT NOT NULL,
    name         TEXT NOT NULL,
    state        TEXT NOT NULL,
    step_index   INTEGER NOT NULL DEFAULT 0,
    config       TEXT NOT NULL DEFAULT '{}',
    secrets      TEXT NOT NULL DEFAULT '',
    oauth_token  TEXT NOT NULL DEFAULT '',
    version      BIGINT NOT NULL DEFAULT 1,
    created_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX tools_account_id ON tools (account_id, id);

CREATE TABLE agents (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    goal       TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL DEFAULT 'draft',
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX agents_account_id ON agents (account_id, id);

-- Deleting a tool detaches it from every agent through the cascade.
CREATE TABLE agent_tools (
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_id  BIGINT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (agent_id, tool_id)
);
CREATE INDEX agent_tools_tool_id ON agent_tools (tool_id);

-- One row per (account, Idempotency-Key). Times are milliseconds since the
-- epoch on the database's clock, so every replica judges leases alike.
-- tool_id has no foreign key: a stored outcome replays after its tool is gone.
CREATE TABLE idempotency_keys (
    account_id       BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key              TEXT NOT NULL,
    fingerprint      BLOB NOT NULL,
    state            TEXT NOT NULL,
    lease_token      TEXT,
    lease_expires_at BIGINT,
    tool_id          BIGINT NOT NULL,
    action           TEXT NOT NULL,
    call_id          TEXT NOT NULL,
    status_code      INTEGER,
    content_type     TEXT,
    response         BLOB,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_dispatched ON idempotency_keys (lease_expires_at) WHERE state = 'dispatched';
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- The call log: every dispatched call, without arguments or results.
CREATE TABLE calls (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id         TEXT NOT NULL UNIQUE,
    account_id      BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    tool_id         BIGINT NOT NULL,
    action          TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    duration_ms     BIGINT NOT NULL,
    idempotency_key TEXT,
    created_at      DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX calls_account_tool ON calls (account_id, tool_id, id);
CREATE INDEX calls_account ON calls (account_id, id);

-- OAuth authorization states: single use, expiring, bound to a tool.
CREATE TABLE oauth_states (
    state_hash TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    tool_id    BIGINT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    verifier   TEXT NOT NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    expires_at DATETIME NOT NULL,
    used_at    DATETIME
);
