package e2e

import (
	"strings"
	"testing"
)

// A DATABASE_URL that names no database, with no PGDATABASE to say it,
// is refused before anything connects. Before, pgx filled in its default
// (the database named after the user) and serve migrated whatever database
// that was. A URL without a host (libpq's local socket) is fine.
func TestProbeOpsDatabaseURLNeedsADatabase(t *testing.T) {
	cases := map[string]string{
		"bare":             "postgres://",
		"no database":      "postgres://postgres@127.0.0.1:5432",
		"no database, /":   "postgresql://postgres@127.0.0.1:5432/",
		"blank dbname":     "postgres://postgres@127.0.0.1:5432/?dbname=",
		"socket, no datab": "postgres://postgres@",
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, stderr, err := fdRun(t, map[string]string{
				"DATABASE_URL":      url,
				"QUIVER_SECRET_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
				"QUIVER_DATA_DIR":   t.TempDir(),
				"PGHOST":            "",
				"PGDATABASE":        "",
			}, "migrate", "status")
			if err == nil || !strings.Contains(stderr, "DATABASE_URL") {
				t.Fatalf("DATABASE_URL=%s: migrate status was not refused by name (%v); stderr:\n%s", url, err, stderr)
			}
			if strings.Contains(stderr, "database unavailable") || strings.Contains(stderr, "failed to connect") {
				t.Fatalf("DATABASE_URL=%s: refused only after connecting:\n%s", url, stderr)
			}
		})
	}
	// What pgx reads besides the URL still counts, and a URL without a host
	// is the local socket: these get as far as connecting (to a database
	// that does not exist).
	for _, env := range []map[string]string{
		{"DATABASE_URL": "postgres://postgres@/?sslmode=disable&host=127.0.0.1", "PGDATABASE": "quiver_probe_ops_no_such_db"},
		{"DATABASE_URL": "postgres:///quiver_probe_ops_no_such_db?sslmode=disable", "PGDATABASE": ""},
	} {
		env["QUIVER_SECRET_KEY"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		stdout, stderr, err := fdRun(t, env, "migrate", "status")
		if err == nil || strings.Contains(stderr, "names no") || strings.Contains(stdout, "applied") {
			t.Fatalf("%v: want a connection error for the missing database, got %v:\n%s%s", env, err, stdout, stderr)
		}
	}
}
