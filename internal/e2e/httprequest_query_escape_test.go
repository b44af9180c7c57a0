package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestHTTPRequestQueryEscaped: a call whose path's query holds a space or
// non-ASCII text (as an agent writes "/search?q=hello world") reaches the
// server as a valid request target, percent-encoded, and answers 200.
// Sent raw, the space ended the request line and the server answered 400.
func TestHTTPRequestQueryEscaped(t *testing.T) {
	var mu sync.Mutex
	var target string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		target = r.RequestURI
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(up.Close)
	srv := testserver.Start(t, testserver.Options{})
	id := connectHTTPTool(t, srv.URL, srv.Key, up.URL)
	r := srv.Do("POST", callPath, map[string]any{"tool": id, "action": "get", "arguments": map[string]any{"path": "/search?q=hello world&city=Zürich"}})
	res, _ := r.JSON()["result"].(map[string]any)
	if r.Status != 200 || res["status"] != float64(200) {
		t.Fatalf("call: %d %s, want the server's 200", r.Status, r.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "/search?q=hello%20world&city=Z%C3%BCrich"; target != want {
		t.Errorf("the server read %q, want %q", target, want)
	}
}
