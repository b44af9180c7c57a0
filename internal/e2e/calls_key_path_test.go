package e2e

import (
	"net/url"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestKeyPathKeepsPlus: GET /idempotency-keys/{key} reads the key as a
// path segment, where '+' is itself. Escaped as url.PathEscape does (a
// '+' left as it is beside an escaped ','), "a+b,c" is not shown as "a b,c",
// another key of the account, nor "+," refused as " ,".
func TestKeyPathKeepsPlus(t *testing.T) {
	e := setupCalls(t, testserver.Options{})
	for i, key := range []string{"a b,c", "a+b,c", "+,", "x+y/z"} {
		if r := e.call(callBody(e.id, "/p", i), key); r.Status != 200 {
			t.Fatalf("call with key %q: %d %s", key, r.Status, r.Body)
		}
	}
	for _, key := range []string{"a+b,c", "a b,c", "+,", "x+y/z"} {
		for _, path := range []string{url.PathEscape(key), url.PathEscape(key) + "/"} {
			g := e.srv.Do("GET", "/api/v1/idempotency-keys/"+path, nil)
			if g.Status != 200 || g.JSON()["key"] != key {
				t.Errorf("GET .../%s: %d %s; want key %q", path, g.Status, g.Body, key)
			}
		}
	}
}
