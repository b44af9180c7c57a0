package httprequest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestPathQueryEscaped: a path's query is sent as a valid request target.
// What may not stand in a query (a space, a quote, non-ASCII text, a "%"
// that starts no escape) is percent-encoded, and what may (escapes,
// reserved characters) is sent as it was written. A space sent raw would
// end the request target mid-line, and the server would read the rest of
// the query as the protocol version.
func TestPathQueryEscaped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.RequestURI
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{
		"/s?q=hello world":           "/v1/s?q=hello%20world",
		`/s?q="a"<b>`:                "/v1/s?q=%22a%22%3Cb%3E",
		"/s?q=é&x=%C3%A9":            "/v1/s?q=%C3%A9&x=%C3%A9",
		"/s?q=100%&r=%zz":            "/v1/s?q=100%25&r=%25zz",
		"/s?a=1&b=x/y:z@w?&c=!$'()*": "/v1/s?a=1&b=x/y:z@w?&c=!$'()*",
		"/s?q=a+b;c=d,e":             "/v1/s?q=a+b;c=d,e",
	} {
		raw, _ := json.Marshal(map[string]string{"path": path})
		if _, err := open().Call(context.Background(), tool(srv.URL+"/v1/"), "get", raw); err != nil {
			t.Errorf("%q: %v", path, err)
			continue
		}
		mu.Lock()
		if got != want {
			t.Errorf("%q: the server read %q, want %q", path, got, want)
		}
		mu.Unlock()
	}
}
