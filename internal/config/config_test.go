package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func parse(env map[string]string) (*Config, error) {
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return Parse(func(k string) string { return env[k] }, environ)
}

func TestDefaults(t *testing.T) {
	c, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != DefaultAddr || !c.Embedded() || c.CallTimeout != 30*time.Second || c.IdempotencyTTL != 24*time.Hour {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if c.Lease() != 35*time.Second {
		t.Fatalf("Lease = %v", c.Lease())
	}
	if c.RelistInterval != 5*time.Second {
		t.Fatalf("RelistInterval = %v", c.RelistInterval)
	}
	if c.CallLogRetention != 30*24*time.Hour {
		t.Fatalf("CallLogRetention = %v", c.CallLogRetention)
	}
	for v, want := range map[string]time.Duration{"0": 0, " 0 ": 0, "2160h": 90 * 24 * time.Hour} {
		if c, err := parse(map[string]string{"QUIVER_CALL_LOG_RETENTION": v}); err != nil || c.CallLogRetention != want {
			t.Fatalf("QUIVER_CALL_LOG_RETENTION=%q: %v, %v", v, c, err)
		}
	}
	if c, err := parse(map[string]string{"QUIVER_MCP_RELIST_INTERVAL": "250ms"}); err != nil || c.RelistInterval != 250*time.Millisecond {
		t.Fatalf("QUIVER_MCP_RELIST_INTERVAL=250ms: %v, %v", c, err)
	}
	if c.DBMaxConns != 32 {
		t.Fatalf("DBMaxConns = %d", c.DBMaxConns)
	}
	for _, v := range []string{"4", " 200 ", "10000"} {
		c, err := parse(map[string]string{"QUIVER_DB_MAX_CONNS": v})
		if want := strings.TrimSpace(v); err != nil || fmt.Sprint(c.DBMaxConns) != want {
			t.Fatalf("QUIVER_DB_MAX_CONNS=%q: %v, %v", v, c, err)
		}
	}
}

func TestErrorsNameTheVariable(t *testing.T) {
	cases := map[string]map[string]string{
		"QUIVER_CALL_TIMEOUT":          {"QUIVER_CALL_TIMEOUT": "soon"},
		"QUIVER_SECRET_KEY":            {"DATABASE_URL": "postgres://localhost/q"},
		"DATABASE_URL":                 {"DATABASE_URL": "mysql://x", "QUIVER_SECRET_KEY": "k"},
		"REDIS_URL":                    {"REDIS_URL": "http://x"},
		"REDIS_URL: names no host":     {"REDIS_URL": "redis:///3"},
		"DATABASE_URL: names no datab": {"DATABASE_URL": "postgres://db.internal", "QUIVER_SECRET_KEY": "k"},
		"REDIS_URL: a redis-sentinel":  {"REDIS_URL": "redis-sentinel://10.0.0.1:26379"},
		"QUIVER_EGRESS_ALLOW_PRIVATE":  {"QUIVER_EGRESS_ALLOW_PRIVATE": "maybe"},
		"QUIVER_OAUTH_GITHUB":          {"QUIVER_OAUTH_GITHUB_CLIENT_ID": "id"},
		"QUIVER_BODY_LIMIT":            {"QUIVER_BODY_LIMIT": "12"},
		"QUIVER_CALL_RATE_LIMIT":       {"QUIVER_CALL_RATE_LIMIT": "-1"},
		"QUIVER_CALL_RATE_LIMIT:":      {"QUIVER_CALL_RATE_LIMIT": "1e-300"},
		"QUIVER_CALL_RATE_LIMIT: must": {"QUIVER_CALL_RATE_LIMIT": "1e300"},
		"QUIVER_CALL_RATE_BURST: must": {"QUIVER_CALL_RATE_BURST": "9999999999"},
		"QUIVER_IDEMPOTENCY_TTL":       {"QUIVER_IDEMPOTENCY_TTL": "30s"},
		"QUIVER_CACHE_TTL":             {"QUIVER_CACHE_TTL": "1h"},
		"QUIVER_OAUTH_GITHUB_CLIENTID": {"QUIVER_OAUTH_GITHUB_CLIENTID": "x"},
		"QUIVER_CALL_RATE_BURST":       {"QUIVER_CALL_RATE_BURST": "lots"},
		"QUIVER_ADDR":                  {"QUIVER_ADDR": ":99999"},
		"QUIVER_PPROF_ADDR":            {"QUIVER_PPROF_ADDR": "localhost"},
		"QUIVER_SWEEP_INTERVAL":        {"QUIVER_SWEEP_INTERVAL": "1ns"},
		"QUIVER_SWEEP_INTERVAL: must":  {"QUIVER_SWEEP_INTERVAL": "1000h"},
		"QUIVER_MCP_RELIST_INTERVAL":   {"QUIVER_MCP_RELIST_INTERVAL": "1ms"},
		"QUIVER_MCP_RELIST_INTERVAL:":  {"QUIVER_MCP_RELIST_INTERVAL": "1h"},
		"QUIVER_LOG_LEVEL":             {"QUIVER_LOG_LEVEL": "loud"},
		"QUIVER_DB_MAX_CONNS":          {"QUIVER_DB_MAX_CONNS": "3"},
		"QUIVER_DB_MAX_CONNS:":         {"QUIVER_DB_MAX_CONNS": "10001"},
		"QUIVER_DB_MAX_CONNS: ":        {"QUIVER_DB_MAX_CONNS": "many"},
		"QUIVER_CALL_LOG_RETENTION":    {"QUIVER_CALL_LOG_RETENTION": "-1h"},
		"QUIVER_CALL_LOG_RETENTION: ":  {"QUIVER_CALL_LOG_RETENTION": "a month"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(env)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %v does not name %s", err, name)
			}
		})
	}
}

func TestOAuthClientsAndOverrides(t *testing.T) {
	c, err := parse(map[string]string{
		"QUIVER_OAUTH_GITHUB_CLIENT_ID": "id", "QUIVER_OAUTH_GITHUB_CLIENT_SECRET": "s",
		"QUIVER_OAUTH_GITHUB_AUTH_URL": "http://a", "QUIVER_OAUTH_MY_IDP_TOKEN_URL": "http://m",
		"QUIVER_OAUTH_MY_IDP_TOKEN_AUTH": "client_secret_basic", "QUIVER_OAUTH_MY_IDP_REVOCATION_URL": "http://m/revoke",
		"QUIVER_MCP_URL_GITHUB_MCP": "http://127.0.0.1:9/mcp", "OTHER": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.OAuthClients["github"] != (OAuthClient{ClientID: "id", ClientSecret: "s", AuthURL: "http://a"}) ||
		c.OAuthClients["my_idp"] != (OAuthClient{TokenURL: "http://m", RevocationURL: "http://m/revoke", TokenAuth: "client_secret_basic"}) || len(c.OAuthClients) != 2 {
		t.Fatalf("OAuthClients = %+v", c.OAuthClients)
	}
	if c.MCPURLs["github-mcp"] != "http://127.0.0.1:9/mcp" {
		t.Fatalf("MCPURLs = %+v", c.MCPURLs)
	}
	for name, env := range map[string]map[string]string{
		"QUIVER_OAUTH_GITHUB_TOKEN_URL":      {"QUIVER_OAUTH_GITHUB_TOKEN_URL": "not a url"},
		"QUIVER_MCP_URL_SENTRY":              {"QUIVER_MCP_URL_SENTRY": "ftp://x"},
		"QUIVER_OAUTH_GITHUB_TOKEN_AUTH":     {"QUIVER_OAUTH_GITHUB_TOKEN_AUTH": "basic"},
		"QUIVER_OAUTH_GOOGLE_REVOCATION_URL": {"QUIVER_OAUTH_GOOGLE_REVOCATION_URL": "/revoke"},
	} {
		if _, err := parse(env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
}

// A command that never opens or seals a sealed value (quiver migrate,
// quiver keys) runs on Postgres without QUIVER_SECRET_KEY, but refuses a
// malformed one as serve does; serve's configuration still requires it.
func TestSecretKeyWithoutSealing(t *testing.T) {
	const good = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=" // 32 bytes
	pg := map[string]string{"DATABASE_URL": "postgres://localhost/q"}
	env := func(extra map[string]string) (func(string) string, []string) {
		all := map[string]string{}
		for _, m := range []map[string]string{pg, extra} {
			for k, v := range m {
				all[k] = v
			}
		}
		var environ []string
		for k, v := range all {
			environ = append(environ, k+"="+v)
		}
		return func(k string) string { return all[k] }, environ
	}
	withoutSealing := func(extra map[string]string) (*Config, error) {
		getenv, environ := env(extra)
		return parseFor(getenv, environ, false)
	}
	const required = "QUIVER_SECRET_KEY: required when DATABASE_URL is set (32 bytes, base64)"
	if _, err := Parse(env(nil)); err == nil || err.Error() != required {
		t.Fatalf("serve's configuration without the key: %v, want %q", err, required)
	}
	for _, extra := range []map[string]string{nil, {"QUIVER_SECRET_KEY": good}, {"DATABASE_URL": "", "QUIVER_SECRET_KEY": good}} {
		c, err := withoutSealing(extra)
		if err != nil {
			t.Fatalf("without sealing, %v: %v", extra, err)
		}
		if c.SecretKey != extra["QUIVER_SECRET_KEY"] {
			t.Fatalf("without sealing, %v: SecretKey %q", extra, c.SecretKey)
		}
	}
	for bad, want := range map[string]string{"s3cr3t?": "must be base64", "c2hvcnQ=": "must decode to 32 bytes"} {
		for _, extra := range []map[string]string{{"QUIVER_SECRET_KEY": bad}, {"DATABASE_URL": "", "QUIVER_SECRET_KEY": bad}} {
			_, err := withoutSealing(extra)
			if err == nil || !strings.Contains(err.Error(), "QUIVER_SECRET_KEY: "+want) || strings.Contains(err.Error(), bad) {
				t.Errorf("without sealing, %v: %v, want a refusal naming QUIVER_SECRET_KEY (%s), without the value", extra, err, want)
			}
		}
	}
}
