package config

import (
	"strings"
	"testing"
)

// TestRateBurstNeedsALimit: QUIVER_CALL_RATE_BURST sizes the bucket of
// QUIVER_CALL_RATE_LIMIT; set alone it was silently ignored (no limit at
// all), which an operator who meant to cap calls would never notice.
func TestRateBurstNeedsALimit(t *testing.T) {
	for _, env := range []map[string]string{
		{"QUIVER_CALL_RATE_BURST": "20"},
		{"QUIVER_CALL_RATE_BURST": "20", "QUIVER_CALL_RATE_LIMIT": "0"},
	} {
		_, err := parse(env)
		if err == nil || !strings.Contains(err.Error(), "QUIVER_CALL_RATE_BURST: ") || !strings.Contains(err.Error(), "QUIVER_CALL_RATE_LIMIT") {
			t.Errorf("%v: err = %v, want a refusal naming QUIVER_CALL_RATE_BURST and QUIVER_CALL_RATE_LIMIT", env, err)
		}
	}
	for _, env := range []map[string]string{
		{"QUIVER_CALL_RATE_BURST": "20", "QUIVER_CALL_RATE_LIMIT": "5"},
		{"QUIVER_CALL_RATE_BURST": "0"}, // the default, written out
		{"QUIVER_CALL_RATE_LIMIT": "5"},
	} {
		if _, err := parse(env); err != nil {
			t.Errorf("%v: %v", env, err)
		}
	}
}

// TestSecretKeyMessageSaysHowToMakeOne: a malformed QUIVER_SECRET_KEY is
// refused at start, by serve as by the commands that do not seal, with a
// message that says what a key is and how to make one, without the value.
func TestSecretKeyMessageSaysHowToMakeOne(t *testing.T) {
	for _, sealing := range []bool{true, false} {
		for _, bad := range []string{"c2hvcnQ=", "s3cr3t?", "dG9vLXNob3J0LWtleS1mb3ItcXVpdmVy"} {
			env := map[string]string{"QUIVER_SECRET_KEY": bad}
			_, err := parseFor(func(k string) string { return env[k] }, []string{"QUIVER_SECRET_KEY=" + bad}, sealing)
			if err == nil {
				t.Errorf("sealing %v, QUIVER_SECRET_KEY=%q: accepted", sealing, bad)
				continue
			}
			msg := err.Error()
			for _, want := range []string{"QUIVER_SECRET_KEY: ", "32 random bytes", "base64", "openssl rand -base64 32"} {
				if !strings.Contains(msg, want) {
					t.Errorf("sealing %v, QUIVER_SECRET_KEY=%q: %q does not say %q", sealing, bad, msg, want)
				}
			}
			if strings.Contains(msg, bad) {
				t.Errorf("sealing %v: %q shows the key", sealing, msg)
			}
		}
	}
	// Still said as before, for whoever matched on it.
	_, err := parse(map[string]string{"QUIVER_SECRET_KEY": "c2hvcnQ="})
	if err == nil || !strings.Contains(err.Error(), "QUIVER_SECRET_KEY: must decode to 32 bytes, got 5") {
		t.Errorf("short key: %v", err)
	}
}

// TestURLPortsRefusedClearly: a base or endpoint URL whose port is 0, past
// 65535 or no number is refused at start, naming the variable and the port;
// a port that is no number was said to be "not an absolute http(s) URL",
// and the OAuth endpoint and MCP URL overrides took any port at all.
func TestURLPortsRefusedClearly(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"QUIVER_PUBLIC_URL", "https://q.example.com:abc", `port "abc" is not a number from 1 to 65535`},
		{"QUIVER_PUBLIC_URL", "https://q.example.com:-1/x", `port "-1" is not a number from 1 to 65535`},
		{"QUIVER_TAVILY_BASE_URL", "https://t.example.com:8o8o", `port "8o8o" is not a number from 1 to 65535`},
		{"QUIVER_TAVILY_BASE_URL", "https://t.example.com:65536", `port "65536" is not`},
		{"QUIVER_OAUTH_GITHUB_AUTH_URL", "https://gh.example.com:0/auth", `port "0" is not`},
		{"QUIVER_OAUTH_GITHUB_TOKEN_URL", "https://gh.example.com:70000/token", `port "70000" is not`},
		{"QUIVER_OAUTH_GITHUB_REVOCATION_URL", "https://gh.example.com:x/revoke", `port "x" is not`},
		{"QUIVER_MCP_URL_GITHUB_MCP", "https://mcp.example.com:99999/mcp", `port "99999" is not`},
		{"QUIVER_MCP_URL_GITHUB_MCP", "https://mcp.example.com:http/mcp", `port "http" is not`},
	} {
		_, err := parse(map[string]string{tc.name: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.name+": "+tc.want) {
			t.Errorf("%s=%q: err = %v, want %q", tc.name, tc.value, err, tc.name+": "+tc.want)
		}
	}
	for name, value := range map[string]string{
		"QUIVER_PUBLIC_URL":            "http://[::1]:19140",
		"QUIVER_TAVILY_BASE_URL":       "https://t.example.com:65535/v1",
		"QUIVER_OAUTH_GITHUB_AUTH_URL": "https://gh.example.com:1/auth",
		"QUIVER_MCP_URL_GITHUB_MCP":    "http://mcp.example.com:8080/mcp",
	} {
		if _, err := parse(map[string]string{name: value}); err != nil {
			t.Errorf("%s=%q: %v", name, value, err)
		}
	}
}

// TestPublicURLWarning: with QUIVER_PUBLIC_URL unset, OAuth providers are
// sent back to http://localhost:8080 whatever port serve listens on, so
// `QUIVER_ADDR=:9000 quiver serve` connected no OAuth tool, without a word.
// Serve now warns of it; a set public URL, the default port and port 0 (a
// free port, as tests take) warn of nothing.
func TestPublicURLWarning(t *testing.T) {
	c, err := parse(map[string]string{"QUIVER_ADDR": "127.0.0.1:9000"})
	if err != nil {
		t.Fatal(err)
	}
	w := c.PublicURLWarning()
	for _, want := range []string{"QUIVER_PUBLIC_URL", "http://localhost:8080", "QUIVER_ADDR", "9000", "http://localhost:9000"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	for _, env := range []map[string]string{
		nil,
		{"QUIVER_ADDR": ":8080"},
		{"QUIVER_ADDR": "127.0.0.1:0"},
		{"QUIVER_ADDR": ":9000", "QUIVER_PUBLIC_URL": "https://q.example.com"},
		{"QUIVER_ADDR": ":9000", "QUIVER_PUBLIC_URL": "http://localhost:8080"},
	} {
		c, err := parse(env)
		if err != nil {
			t.Fatal(err)
		}
		if w := c.PublicURLWarning(); w != "" {
			t.Errorf("%v: warning %q, want none", env, w)
		}
	}
}

// TestPprofWarning: QUIVER_PPROF_ADDR serves the process's profiles, its
// command line and goroutine stacks to whoever reaches it, with no key, and
// ":6060" is every interface. Serve warns of an address beyond loopback.
func TestPprofWarning(t *testing.T) {
	for addr, warn := range map[string]bool{
		"":                    false,
		"127.0.0.1:6060":      false,
		"[::1]:6060":          false,
		"localhost:6060":      false,
		":6060":               true,
		"0.0.0.0:6060":        true,
		"[::]:6060":           true,
		"10.0.0.5:6060":       true,
		"pprof.internal:6060": true,
	} {
		c, err := parse(map[string]string{"QUIVER_PPROF_ADDR": addr})
		if err != nil {
			t.Fatal(err)
		}
		w := c.PprofWarning()
		if (w != "") != warn || warn && (!strings.Contains(w, "QUIVER_PPROF_ADDR") || !strings.Contains(w, "127.0.0.1")) {
			t.Errorf("QUIVER_PPROF_ADDR=%q: warning %q, want one: %v", addr, w, warn)
		}
	}
}

// TestDatabaseURLPort: a DATABASE_URL port of 0 or past 65535 is refused
// with the configuration, naming the port as REDIS_URL's is; pgx refused it
// only once a command opened the database, quoting the whole URL. Each
// host of a multi-host URL is checked.
func TestDatabaseURLPort(t *testing.T) {
	for _, v := range []string{
		"postgres://u:s3cret@127.0.0.1:99999/q",
		"postgres://u@127.0.0.1:0/q",
		"postgresql://u@db1:5432,db2:70000/q",
		"postgres://u@[::1]:65536/q",
	} {
		_, err := parse(map[string]string{"DATABASE_URL": v, "QUIVER_SECRET_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="})
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL: port ") || !strings.Contains(err.Error(), "is not from 1 to 65535") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("DATABASE_URL=%q: err = %v", v, err)
		}
	}
	for _, v := range []string{"postgres://u@127.0.0.1:5432/q", "postgres://u@db1,db2:5433/q", "postgres://u@[::1]/q", "postgres:///q?host=/tmp"} {
		if _, err := parse(map[string]string{"DATABASE_URL": v, "QUIVER_SECRET_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}); err != nil {
			t.Errorf("DATABASE_URL=%q: %v", v, err)
		}
	}
}
