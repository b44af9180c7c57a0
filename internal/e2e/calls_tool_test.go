package e2e

// A local tool server for the call engine's tests: an ordinary HTTP server
// reached through the builtin http-request connector, counting what really
// ran. Paths choose its behaviour.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

type toolServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
	hang   chan struct{} // closed at cleanup to free hanging handlers
	total  atomic.Int64
}

func startToolServer(t testing.TB) *toolServer {
	ts := &toolServer{counts: map[string]int{}, hang: make(chan struct{})}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(func() {
		close(ts.hang)
		ts.Server.CloseClientConnections()
		ts.Server.Close()
	})
	return ts
}

// count returns how many requests reached path (its first segment).
func (ts *toolServer) count(path string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.counts[path]
}

func (ts *toolServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	seg := "/" + strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
	ts.mu.Lock()
	ts.counts[seg]++
	n := ts.counts[seg]
	ts.mu.Unlock()
	ts.total.Add(1)
	q := r.URL.Query()
	switch seg {
	case "/slow": // runs, then answers after ms milliseconds
		ms, _ := strconv.Atoi(q.Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ts.hang:
		}
	case "/hang": // runs, then never answers
		<-ts.hang
		return
	case "/drop": // runs, then drops the connection without an answer
		hj, ok := w.(http.Hijacker)
		if ok {
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		panic(http.ErrAbortHandler)
	case "/fail": // runs and reports an error
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":"boom","n":%d}`, n)
		return
	case "/big": // answers a JSON string of n bytes
		size, _ := strconv.Atoi(q.Get("n"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`"`))
		w.Write([]byte(strings.Repeat("a", size)))
		w.Write([]byte(`"`))
		return
	case "/raw": // answers the request body as-is, as JSON
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"n": n, "path": r.URL.Path, "got": json.RawMessage(orNull(body))})
}

func orNull(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return []byte("null")
	}
	return b
}

// connectHTTPTool connects and configures an http-request tool on base and
// returns its ID.
func connectHTTPTool(t testing.TB, base, key, toolURL string) int64 {
	t.Helper()
	r := testserver.Do(t, base, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
	if r.Status != 201 {
		t.Fatalf("create tool: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id)
	if r := testserver.Do(t, base, key, "POST", path, map[string]any{"user_response": map[string]any{"base_url": toolURL}}); r.Status != 200 {
		t.Fatalf("step 1: %d %s", r.Status, r.Body)
	}
	r = testserver.Do(t, base, key, "POST", path, map[string]any{"user_response": map[string]any{"auth_type": "none"}})
	if r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("step 2: %d %s", r.Status, r.Body)
	}
	return id
}

// callBody is a call of the http-request tool's post action.
func callBody(tool int64, path string, body any) map[string]any {
	return map[string]any{"tool": tool, "action": "post", "arguments": map[string]any{"path": path, "body": body}}
}

const callPath = "/api/v1/agents/custom-tools/call/"

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// resultLen is the size in bytes of a call response's result, as sent.
func resultLen(t *testing.T, body []byte) int {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("call response: %v", err)
	}
	return len(m["result"])
}

func httpDeadURL(t *testing.T) string {
	srv := startToolServer(t)
	u := srv.URL
	srv.Server.Close()
	return u
}

func mustJSON(v any) string {
	var b strings.Builder
	if err := jsonEncode(&b, v); err != nil {
		panic(err)
	}
	return b.String()
}
