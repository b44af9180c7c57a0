package e2e

import (
	"strings"
	"testing"
)

// A DATABASE_URL that names no host or no database, with no PGHOST or
// PGDATABASE to say it, is refused before anything connects. Before, pgx
// filled in its defaults (a local socket or localhost, the database named
// after the OS user) and serve migrated whatever database that was.
func TestProbeOpsDatabaseURLNeedsHostAndDatabase(t *testing.T) {
	cases := map[string]string{
		"bare":             "postgres://",
		"no host":          "postgres:///quiver",
		"no database":      "postgres://postgres@127.0.0.1:5432",
		"no database, /":   "postgresql://postgres@127.0.0.1:5432/",
		"blank host query": "postgres:///quiver?host=",
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
	// What pgx reads besides the URL still counts: a URL without a host or
	// a database is fine when PGHOST and PGDATABASE say them.
	stdout, stderr, err := fdRun(t, map[string]string{
		"DATABASE_URL":      "postgres://postgres@/?sslmode=disable&host=127.0.0.1",
		"QUIVER_SECRET_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
		"PGDATABASE":        "quiver_probe_ops_no_such_db",
	}, "migrate", "status")
	if err == nil || strings.Contains(stderr, "names no") || strings.Contains(stdout, "applied") {
		t.Fatalf("host and PGDATABASE given: want a connection error for the missing database, got %v:\n%s%s", err, stdout, stderr)
	}
}
