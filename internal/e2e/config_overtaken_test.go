package e2e

// A configuration step whose answer is being verified (Quiver connects to
// the custom MCP server before it accepts the step) when the tool is
// deleted: the answer cannot be stored, and the response must say the tool
// is gone, not that it "was changed by another request; read it again and
// retry": reading it again is a 404.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// coHeldServer puts a proxy in front of an MCP server that holds the first
// request it sees until the test releases it: entered gets a value when it
// arrives.
func coHeldServer(t *testing.T, target string) (u string, entered, release chan struct{}) {
	t.Helper()
	entered, release = make(chan struct{}, 1), make(chan struct{}, 1)
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: to.Scheme, Host: to.Host})
	var first atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL + to.Path, entered, release
}

func TestConfigAnswerOvertakenByDelete(t *testing.T) {
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	held, entered, release := coHeldServer(t, counter.URL)
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")

	done := make(chan *testserver.Response, 1)
	go func() {
		done <- srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": held}})
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("provide-config did not reach the server")
	}
	if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	release <- struct{}{}
	r := <-done
	if r.Status != 404 || r.JSON()["error"] != "not_found" {
		t.Fatalf("provide-config on a tool deleted while its answer was verified: %d %s, want 404 not_found", r.Status, r.Body)
	}
	if r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 404 {
		t.Fatalf("the deleted tool: %d %s", r.Status, r.Body)
	}
}
