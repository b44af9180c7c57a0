// Package testserver starts real Quiver servers for black-box tests: in
// process (an App served by app.HTTPServer, as the binary serves it) or as
// a subprocess of the built binary (for tests that kill it). Each gets its own Postgres database or SQLite
// folder. It is imported only by tests.
package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/app"
	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testlog"
)

// TestSecretKey is the QUIVER_SECRET_KEY of test servers on Postgres.
var TestSecretKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{42}, 32))

// Options configures a test server.
type Options struct {
	// Postgres selects a fresh Postgres database (else SQLite in a temp dir).
	Postgres bool
	// DatabaseURL reuses a database (several replicas on one database).
	DatabaseURL string
	// RedisURL points at Redis; empty means the in-process cache.
	RedisURL string
	// Env adds or overrides environment variables of the configuration.
	Env map[string]string
}

// Server is a running in-process Quiver.
type Server struct {
	URL         string
	Key         string // an API key of account "test"
	DatabaseURL string
	App         *app.App
	logs        *testlog.Buffer
	t           testing.TB
}

// Env returns the configuration environment for opts.
func Env(t testing.TB, opts Options) map[string]string {
	env := map[string]string{
		"QUIVER_DATA_DIR":             t.TempDir(),
		"QUIVER_EGRESS_ALLOW_PRIVATE": "true",
		"QUIVER_LOG_LEVEL":            "debug",
		"QUIVER_SWEEP_INTERVAL":       "100ms",
	}
	if opts.DatabaseURL == "" && opts.Postgres {
		opts.DatabaseURL = testdb.Postgres(t, "srv")
	}
	if opts.DatabaseURL != "" {
		env["DATABASE_URL"] = opts.DatabaseURL
		env["QUIVER_SECRET_KEY"] = TestSecretKey
	}
	if opts.RedisURL != "" {
		env["REDIS_URL"] = opts.RedisURL
		// One prefix per database: replicas of one test share it, other
		// tests and packages never see it.
		scope := env["DATABASE_URL"]
		if scope == "" {
			scope = env["QUIVER_DATA_DIR"]
		}
		sum := sha256.Sum256([]byte(scope))
		env["QUIVER_REDIS_PREFIX"] = "quivertest:" + hex.EncodeToString(sum[:6]) + ":"
	}
	for k, v := range opts.Env {
		env[k] = v
	}
	return env
}

// Start runs a Quiver in process and creates an API key.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	env := Env(t, opts)
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cfg, err := config.Parse(func(k string) string { return env[k] }, environ)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	logger := logging.New(logs, cfg.LogLevel)
	ctx := context.Background()
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	bgCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.RunBackground(bgCtx); close(done) }()
	// Served as the binary serves it (app.HTTPServer), on a port of its own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := a.HTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() {
		hs.Close()
		stop()
		<-done
		a.Close()
	})
	key, _, err := a.Accounts.CreateKey(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &Server{URL: "http://" + ln.Addr().String(), Key: key, DatabaseURL: env["DATABASE_URL"], App: a, logs: logs, t: t}
}

// LogText returns what the server logged so far.
func (s *Server) LogText() string { return s.logs.String() }

// NewKey returns a key of another account.
func (s *Server) NewKey(account string) string {
	key, _, err := s.App.Accounts.CreateKey(context.Background(), account)
	if err != nil {
		s.t.Fatal(err)
	}
	return key
}

// Response is an HTTP answer read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r *Response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Do sends a request with the test key. body may be nil, a string, []byte
// or a value to encode as JSON. headers are name/value pairs.
func (s *Server) Do(method, path string, body any, headers ...string) *Response {
	s.t.Helper()
	return Do(s.t, s.URL, s.Key, method, path, body, headers...)
}

// Do sends a request to base with key ("" for none).
func Do(t testing.TB, base, key, method, path string, body any, headers ...string) *Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-KEY", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
