package config

import (
	"slices"
	"testing"
)

// TestUnreadVariables: a QUIVER_* variable Quiver does not read is listed,
// with the name it most likely meant; those it reads, the OAuth and MCP URL
// families (checked where they are read) and the tooling's own are not.
func TestUnreadVariables(t *testing.T) {
	c, err := parse(map[string]string{
		"QUIVER_CALLTIMEOUT":                "5s",
		"QUIVER_EGRES_ALLOW_PRIVATE":        "true",
		"QUIVER_SOMETHING_ELSE_ENTIRELY":    "1",
		"QUIVER_CALL_TIMEOUT":               "10s",
		"QUIVER_LOG_LEVEL":                  "",
		"QUIVER_OAUTH_GITHUB_CLIENT_ID":     "id",
		"QUIVER_OAUTH_GITHUB_CLIENT_SECRET": "s",
		"QUIVER_MCP_URL_SENTRY":             "https://mcp.example/sentry",
		"QUIVER_TEST_POSTGRES_URL":          "postgres://x/y",
		"QUIVER_BENCH_ROUNDS":               "3",
		"QUIVER_BIN":                        "/tmp/quiver",
		"PATH":                              "/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []UnreadVar{
		{Name: "QUIVER_CALLTIMEOUT", Suggest: "QUIVER_CALL_TIMEOUT"},
		{Name: "QUIVER_EGRES_ALLOW_PRIVATE", Suggest: "QUIVER_EGRESS_ALLOW_PRIVATE"},
		{Name: "QUIVER_SOMETHING_ELSE_ENTIRELY"},
	}
	if !slices.Equal(c.Unread, want) {
		t.Fatalf("Unread = %+v, want %+v", c.Unread, want)
	}
	if c, err := parse(nil); err != nil || len(c.Unread) != 0 {
		t.Fatalf("no variables: %+v, %v", c, err)
	}
}
