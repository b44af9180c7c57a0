-- A token refresh claims its tool with a lease, so that no connection is
-- held while the provider answers (the same schema as Postgres's):
-- refresh_lease is the owner's random token ('' when free), and
-- refresh_lease_until its expiry in milliseconds of the database clock.
ALTER TABLE tools ADD COLUMN refresh_lease TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN refresh_lease_until BIGINT NOT NULL DEFAULT 0;
