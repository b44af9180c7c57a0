ALTER TABLE tools DROP COLUMN refresh_lease_until;
ALTER TABLE tools DROP COLUMN refresh_lease;
