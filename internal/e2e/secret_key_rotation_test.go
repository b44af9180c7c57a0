package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestSecretKeyRotation: QUIVER_SECRET_KEY is rotated by starting serve
// with the new key and the old one in QUIVER_SECRET_KEY_PREVIOUS. Tools
// connected under the old key keep working, their secrets are sealed again
// with the new key at that start (the log says when none is left), and the
// next start needs the new key alone. Without the old key listed, the new
// key is refused at start, as before.
func TestSecretKeyRotation(t *testing.T) {
	var mu sync.Mutex
	var seen []string // the API keys Tavily was called with
	tavily := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"query":"q","results":[]}`)
	}))
	t.Cleanup(tavily.Close)
	oldKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("o", 32)))
	newKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("n", 32)))
	db := testdb.Postgres(t, "rotation")
	env := func(key, previous string) map[string]string {
		e := map[string]string{"DATABASE_URL": db, "QUIVER_SECRET_KEY": key, "QUIVER_TAVILY_BASE_URL": tavily.URL, "QUIVER_LOG_LEVEL": "info"}
		if previous != "" {
			e["QUIVER_SECRET_KEY_PREVIOUS"] = previous
		}
		return e
	}
	apiKey := createKey(t, env(oldKey, ""), "rotation")
	search := func(p *proc, want string) {
		t.Helper()
		mu.Lock()
		seen = nil
		mu.Unlock()
		r := testserver.Do(t, p.URL, apiKey, "POST", callPath, map[string]any{"tool": 1, "action": "search", "arguments": map[string]any{"query": "q"}})
		mu.Lock()
		defer mu.Unlock()
		if r.Status != 200 || len(seen) != 1 || seen[0] != "Bearer "+want {
			t.Fatalf("search: %d %s, Tavily saw %q; want it called with %q", r.Status, r.Body, seen, want)
		}
	}

	p := startProc(t, env(oldKey, ""))
	r := testserver.Do(t, p.URL, apiKey, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	if id := fdInt(t, fdObject(t, r)["id"]); id != 1 {
		t.Fatalf("tool ID %d, want 1", id)
	}
	if r = testserver.Do(t, p.URL, apiKey, "POST", "/api/v1/agents/custom-tools/1/provide-config/",
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-rotated"}}); r.Status != 200 {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	search(p, "tvly-rotated")
	p.kill()

	// The new key alone cannot open what the old one sealed.
	refused, ready := launchProc(t, env(newKey, ""), quiverBinary(t), "serve")
	select {
	case <-refused.done:
		if !strings.Contains(refused.logText(), "QUIVER_SECRET_KEY cannot open the secrets") {
			t.Fatalf("serve with the new key alone exited without saying why:\n%s", refused.logText())
		}
	case <-ready:
		t.Fatal("serve started with a key that cannot open the stored secrets")
	case <-time.After(30 * time.Second):
		t.Fatal("serve with the new key alone neither started nor exited")
	}

	p = startProc(t, env(newKey, oldKey))
	search(p, "tvly-rotated")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.logText(), "every tool's secrets are sealed with QUIVER_SECRET_KEY") {
		if time.Now().After(deadline) {
			t.Fatalf("no word that the secrets were sealed again:\n%s", p.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(p.logText(), `"tools":1`) {
		t.Errorf("the rotation's log line does not count the one tool:\n%s", p.logText())
	}
	p.kill()

	p = startProc(t, env(newKey, ""))
	search(p, "tvly-rotated")
}
