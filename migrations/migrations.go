// Package migrations embeds Quiver's numbered SQL migrations, one folder per
// database dialect (postgres, sqlite). Files are NNN_name.up.sql and
// NNN_name.down.sql; internal/store runs them.
package migrations

import "embed"

// FS holds postgres/*.sql and sqlite/*.sql.
//
//go:embed postgres/*.sql sqlite/*.sql
var FS embed.FS
