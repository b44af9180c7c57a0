// Package e2e holds Quiver's black-box tests: each starts a real server (in
// process through internal/testserver, or the built binary) and speaks to it
// only over HTTP, the way SDKs and users do. They check the contract of
// /work/shared/API.md and the OpenAPI document, never internals.
package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// fdJSONType is the Content-Type of every JSON answer.
const fdJSONType = "application/json; charset=utf-8"

// fdTimeRE is an RFC 3339 time in UTC, as every time in the API is.
var fdTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// fdBackends are the databases a foundation test runs on.
var fdBackends = []struct {
	name string
	opts testserver.Options
}{
	{"postgres", testserver.Options{Postgres: true}},
	{"sqlite", testserver.Options{}},
}

// fdClient is a test server seen through one API key.
type fdClient struct {
	t   *testing.T
	srv *testserver.Server
	key string
}

func fdStart(t *testing.T, opts testserver.Options) *fdClient {
	t.Helper()
	srv := testserver.Start(t, opts)
	return &fdClient{t: t, srv: srv, key: srv.Key}
}

// as returns the same server seen through another key.
func (c *fdClient) as(key string) *fdClient { return &fdClient{t: c.t, srv: c.srv, key: key} }

func (c *fdClient) do(method, path string, body any, headers ...string) *testserver.Response {
	c.t.Helper()
	return testserver.Do(c.t, c.srv.URL, c.key, method, path, body, headers...)
}

// ok sends a request and requires the status, returning the decoded object.
func (c *fdClient) ok(want int, method, path string, body any, headers ...string) map[string]any {
	c.t.Helper()
	r := c.do(method, path, body, headers...)
	if r.Status != want {
		c.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Body)
	}
	if want == http.StatusNoContent {
		return nil
	}
	return fdObject(c.t, r)
}

// fail sends a request and requires an error envelope with status and code.
func (c *fdClient) fail(status int, code, method, path string, body any, headers ...string) map[string]any {
	c.t.Helper()
	r := c.do(method, path, body, headers...)
	return fdWantError(c.t, r, status, code)
}

// createTool connects a catalog tool and returns its ID.
func (c *fdClient) createTool(catalogName string) int64 {
	c.t.Helper()
	m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": catalogName})
	return fdInt(c.t, m["id"])
}

// createAgent creates an agent and returns its ID.
func (c *fdClient) createAgent(body map[string]any) int64 {
	c.t.Helper()
	m := c.ok(201, "POST", "/api/v1/agents/", body)
	return fdInt(c.t, m["id"])
}

// fdObject checks a JSON answer's headers and decodes its object.
func fdObject(t testing.TB, r *testserver.Response) map[string]any {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != fdJSONType {
		t.Fatalf("Content-Type %q, want %q (status %d, body %s)", ct, fdJSONType, r.Status, r.Body)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("no X-Request-Id on a %d answer", r.Status)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(r.Body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		t.Fatalf("body is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// fdWantError checks an error answer: status, envelope and code.
func fdWantError(t testing.TB, r *testserver.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d %s; body %s", r.Status, status, code, r.Body)
	}
	m := fdObject(t, r)
	if m["error"] != code {
		t.Fatalf("error %v, want %s; body %s", m["error"], code, r.Body)
	}
	if msg, _ := m["message"].(string); strings.TrimSpace(msg) == "" {
		t.Fatalf("error without a message: %s", r.Body)
	}
	for _, leak := range []string{"goroutine ", "panic(", ".go:", "runtime/debug"} {
		if strings.Contains(string(r.Body), leak) {
			t.Fatalf("error body leaks internals (%q): %s", leak, r.Body)
		}
	}
	return m
}

// fdFields returns the fields of a 422 envelope.
func fdFields(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	f, ok := m["fields"].(map[string]any)
	if !ok {
		t.Fatalf("no fields object in %v", m)
	}
	return f
}

// fdWantFields requires a 422 validation_error naming exactly these fields.
func fdWantFields(t testing.TB, r *testserver.Response, code string, names ...string) map[string]any {
	t.Helper()
	m := fdWantError(t, r, 422, code)
	f := fdFields(t, m)
	for _, n := range names {
		if s, _ := f[n].(string); s == "" {
			t.Fatalf("fields has no message for %q: %v", n, f)
		}
	}
	if len(f) != len(names) {
		t.Fatalf("fields %v, want exactly %v", f, names)
	}
	return f
}

func fdInt(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a JSON number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return i
}

func fdInts(t testing.TB, v any) []int64 {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not an array", v, v)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		out[i] = fdInt(t, x)
	}
	return out
}

func fdList(t testing.TB, m map[string]any, field string) []map[string]any {
	t.Helper()
	arr, ok := m[field].([]any)
	if !ok {
		t.Fatalf("%q is not an array in %v", field, m)
	}
	out := make([]map[string]any, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(map[string]any); !ok {
			t.Fatalf("%s[%d] is not an object: %v", field, i, x)
		}
	}
	return out
}

// fdTime checks an RFC 3339 UTC time near now.
func fdTime(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	if !fdTimeRE.MatchString(s) {
		t.Fatalf("time %q is not RFC 3339 UTC ending in Z", v)
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	if d := time.Since(tm); d < -2*time.Minute || d > 10*time.Minute {
		t.Fatalf("time %s is %v away from now", s, d)
	}
	return tm
}

func TestMain(m *testing.M) {
	if target := os.Getenv(proxyTargetEnv); target != "" {
		runBareProxy(target) // this binary, re-run as the benchmark's baseline proxy
		return
	}
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// with returns the client bound to another (sub)test.
func (c *fdClient) with(t *testing.T) *fdClient { return &fdClient{t: t, srv: c.srv, key: c.key} }
