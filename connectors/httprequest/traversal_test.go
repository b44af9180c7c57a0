package httprequest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

// TestRefusedWaysOut: a path that servers read as climbing out of the base
// path, though no segment is "..", and a header given twice (names are
// case-insensitive, and which would be sent would depend on map order) are
// refused before anything is sent.
func TestRefusedWaysOut(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		t.Logf("reached: %s", r.URL.RequestURI())
	}))
	t.Cleanup(srv.Close)
	for name, args := range map[string]string{
		// Tomcat and Jetty take what follows ";" as the segment's
		// parameters; IIS takes "\" for "/".
		"dot dot with parameters":         `{"path":"/v1/..;/admin"}`,
		"encoded dot dot with parameters": `{"path":"/v1/%2e%2e%3bx=1/admin"}`,
		"dot dot after backslash":         `{"path":"/v1/a\\..\\admin"}`,
		"encoded backslash dot dot":       `{"path":"/v1/%5c..%5cadmin"}`,
		"header twice":                    `{"path":"/","headers":{"x-a":"1","X-A":"2"}}`,
	} {
		_, err := open().Call(context.Background(), tool(srv.URL+"/v1/"), "get", json.RawMessage(args))
		if err == nil {
			t.Errorf("%s: sent", name)
		} else if k := connectortest.Kind(t, err); k != connectors.KindRejected {
			t.Errorf("%s: kind %s (%v)", name, k, err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("refused calls reached the server %d times", n)
	}
	// What only looks like them is sent.
	for _, path := range []string{"/v1/a..;b/c", "/v1/..x/y", "/v1/x;..", "/v1/a\\b"} {
		raw, _ := json.Marshal(map[string]string{"path": path})
		if _, err := open().Call(context.Background(), tool(srv.URL+"/v1/"), "get", raw); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
