package e2e

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestConcurrentDuplicatesRunOnce: fifty concurrent requests with one key
// and body, in every deployment, run the tool once; the rest replay it or
// are told the first is still in progress; racing different bodies on one
// key, one runs and the rest are refused.
func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			e := setupCalls(t, opts)
			body := callBody(e.id, "/slow?ms=200", map[string]any{"charge": 100})
			var wg sync.WaitGroup
			results := make([]*testserver.Response, 50)
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					results[i] = e.call(body, "k-50")
				}(i)
			}
			wg.Wait()
			var ok200 []byte
			for _, r := range results {
				switch {
				case r.Status == 200:
					if ok200 != nil && !bytes.Equal(ok200, r.Body) {
						t.Fatalf("two different 200 bodies:\n%s\n%s", ok200, r.Body)
					}
					ok200 = r.Body
				case r.Status == 409 && r.JSON()["error"] == "request_in_progress":
				default:
					t.Fatalf("unexpected answer %d %s", r.Status, r.Body)
				}
			}
			if n := e.tool.count("/slow"); n != 1 {
				t.Fatalf("tool ran %d times, want 1", n)
			}

			// Racing different bodies on one key: one runs, the rest are refused.
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					results[i] = e.call(callBody(e.id, "/race", i), "k-race")
				}(i)
			}
			wg.Wait()
			wins := 0
			for _, r := range results {
				switch {
				case r.Status == 200:
					wins++
				case r.Status == 409 && (r.JSON()["error"] == "idempotency_key_reused" || r.JSON()["error"] == "request_in_progress"):
				default:
					t.Fatalf("unexpected answer %d %s", r.Status, r.Body)
				}
			}
			if wins != 1 || e.tool.count("/race") != 1 {
				t.Fatalf("%d won, tool ran %d times", wins, e.tool.count("/race"))
			}
		})
	}
}

// TestToolRefusalNamesTheArgument: an argument the http-request tool
// refuses before sending anything is named in fields, as a schema refusal
// is, rather than "arguments"; the key stays free.
func TestToolRefusalNamesTheArgument(t *testing.T) {
	t.Parallel()
	e := setupCalls(t, testserver.Options{})
	post := func(args map[string]any) map[string]any {
		return map[string]any{"tool": e.id, "action": "post", "arguments": args}
	}
	for i, tc := range []struct {
		body  map[string]any
		field string
	}{
		{post(map[string]any{"path": "/../x"}), "path"},
		{post(map[string]any{"path": "//elsewhere.example/x"}), "path"},
		{post(map[string]any{"path": "/x", "headers": map[string]any{"Host": "elsewhere.example"}}), "headers"},
		{post(map[string]any{"path": "/x", "query": map[string]any{"q": map[string]any{"a": 1}}}), "query"},
	} {
		key := fmt.Sprintf("k-refused-%d", i)
		fdWantFields(t, e.call(tc.body, key), "invalid_arguments", tc.field)
		if r := e.srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); r.Status != 404 {
			t.Errorf("%v: the key after the refusal: %d %s, want 404 (free)", tc.body, r.Status, r.Body)
		}
	}
	if n := e.tool.count("/x"); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}
