package store

// MigrationLockID is the advisory lock migrations hold, for tests that
// hold it as another process would.
const MigrationLockID = migrationLockID
