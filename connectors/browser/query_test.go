package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/connectors/browser"
)

// TestFetchPageQueryEscaped: a url's query, and a redirect's, go out as a
// valid request target: a space or non-ASCII text percent-encoded, what
// may stand in a query as written. Sent raw, a space ended the request
// target mid-line and the server answered 400.
func TestFetchPageQueryEscaped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var targets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		targets = append(targets, r.RequestURI)
		mu.Unlock()
		if r.URL.Path == "/search" {
			w.Header().Set("Location", "/next?q=à b&k=%41")
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/search?q=hello world&x=é&y=a+b")
	if err != nil || res.IsError {
		t.Fatalf("fetch: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/search?q=hello%20world&x=%C3%A9&y=a+b", "/next?q=%C3%A0%20b&k=%41"}
	if len(targets) != 2 || targets[0] != want[0] || targets[1] != want[1] {
		t.Fatalf("the server read %q, want %q", targets, want)
	}
}
