-- A token refresh claims its tool with a lease instead of holding the row's
-- lock (SELECT … FOR UPDATE) in a transaction across the provider's round
-- trip, which kept a pool connection per refresh for up to its whole
-- timeout: refresh_lease is the owner's random token ('' when free), and
-- refresh_lease_until its expiry in milliseconds of the database clock, so
-- replicas' clocks never disagree about it. Constant defaults add the
-- columns without rewriting the table.
ALTER TABLE tools ADD COLUMN refresh_lease TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN refresh_lease_until BIGINT NOT NULL DEFAULT 0;
