package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// A read-only key gets no answer under an Idempotency-Key that a call of an
// action not annotated read-only used (not its replay, nor its 409s),
// whatever the tool has become since: deleted, or reset. The key's row
// records the action's annotation when the key is reserved, and a cached
// outcome carries it. A read-only action's answer still replays to it. Each
// deployment is asked on the replica that ran the calls (its memory) and,
// with a database replicas share, on a second one, which has them from
// Redis, or without Redis from the database row, then from its memory.
func TestReadOnlyKeyGetsNoAnswerOfAWriteCallOnceItsToolLeaves(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			e := setupCalls(t, opts)
			ro, _, err := e.srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			replicas := []string{e.srv.URL}
			if opts.Postgres {
				b := testserver.Start(t, testserver.Options{DatabaseURL: e.srv.DatabaseURL, RedisURL: opts.RedisURL})
				replicas = append(replicas, b.URL)
			}
			call := func(base, apiKey string, body any, idem string) *testserver.Response {
				return testserver.Do(t, base, apiKey, "POST", callPath, body, "Idempotency-Key", idem)
			}
			get := func(tool int64, path string) map[string]any {
				return map[string]any{"tool": tool, "action": "get", "arguments": map[string]any{"path": path}}
			}
			// firsts runs a post with the full key and a get with the
			// read-only one, each under a key of its own.
			firsts := func(tool int64, name string) (write, read map[string]any, wrote, readFirst *testserver.Response) {
				write, read = callBody(tool, "/w-"+name, 1), get(tool, "/r-"+name)
				if wrote = call(e.srv.URL, e.srv.Key, write, "w-"+name); wrote.Status != 200 {
					t.Fatalf("the full key's post: %d %s", wrote.Status, wrote.Body)
				}
				if readFirst = call(e.srv.URL, ro, read, "r-"+name); readFirst.Status != 200 {
					t.Fatalf("the read-only key's get: %d %s", readFirst.Status, readFirst.Body)
				}
				return
			}
			// seen waits until every replica sees what became of the tool
			// (each caches tools for a second), so that no replica refuses
			// the read-only key only because its copy still lists the post.
			seen := func(tool int64, status int, code string) {
				for _, base := range replicas {
					testserver.Eventually(t, 5*time.Second, "the replica to see the tool's change", func() bool {
						r := testserver.Do(t, base, e.srv.Key, "POST", callPath, get(tool, "/probe"))
						return r.Status == status && r.JSON()["error"] == code
					})
				}
			}
			// after asks every replica, once the tool has left, for the
			// answers of the two keys: the full key gets them all, the
			// read-only key only the get's, and nothing runs.
			after := func(name string, write, read map[string]any, wrote, readFirst *testserver.Response) {
				t.Helper()
				for i, base := range replicas {
					// Twice on each: the first may come from Redis or the
					// row, the second comes from this replica's memory.
					for round := 0; round < 2; round++ {
						r := call(base, ro, write, "w-"+name)
						if r.Status != 403 || r.JSON()["error"] != "forbidden" {
							t.Fatalf("replica %d, round %d: the read-only key replaying the full key's post: %d %s", i, round, r.Status, r.Body)
						}
						if r := call(base, ro, read, "r-"+name); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, readFirst.Body) {
							t.Fatalf("replica %d, round %d: the read-only key replaying its get: %d %s", i, round, r.Status, r.Body)
						}
						if r := call(base, e.srv.Key, write, "w-"+name); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, wrote.Body) {
							t.Fatalf("replica %d, round %d: the full key replaying its post: %d %s", i, round, r.Status, r.Body)
						}
					}
				}
				if n := e.tool.count("/w-" + name); n != 1 {
					t.Fatalf("the post ran %d times", n)
				}
			}

			// Deleted.
			write, read, wrote, readFirst := firsts(e.id, "del")
			for _, base := range replicas {
				wantError(t, call(base, ro, write, "w-del"), 403, "forbidden") // the tool tells
			}
			// A post still running when the tool goes, then its outcome
			// unknown: the read-only key is not told either.
			hang := callBody(e.id, "/hang", 1)
			fire(e.srv.URL, e.srv.Key, hang, "w-hang")
			testserver.Eventually(t, 5*time.Second, "the post to reach the tool", func() bool { return e.tool.count("/hang") == 1 })
			if r := e.srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id), nil); r.Status != 204 {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
			seen(e.id, 404, "not_found")
			for i, base := range replicas {
				if r := call(base, ro, hang, "w-hang"); r.Status != 403 || r.JSON()["error"] != "forbidden" {
					t.Fatalf("replica %d: the read-only key on a post in progress: %d %s", i, r.Status, r.Body)
				}
			}
			after("del", write, read, wrote, readFirst)
			testserver.Eventually(t, 10*time.Second, "the hanging post's outcome to be unknown", func() bool {
				return e.srv.Do("GET", "/api/v1/idempotency-keys/w-hang", nil).JSON()["state"] == "outcome_unknown"
			})
			for i, base := range replicas {
				for round := 0; round < 2; round++ {
					if r := call(base, ro, hang, "w-hang"); r.Status != 403 || r.JSON()["error"] != "forbidden" {
						t.Fatalf("replica %d, round %d: the read-only key on a post whose outcome is unknown: %d %s", i, round, r.Status, r.Body)
					}
					wantError(t, call(base, e.srv.Key, hang, "w-hang"), 409, "tool_outcome_unknown")
				}
			}
			if n := e.tool.count("/hang"); n != 1 {
				t.Fatalf("the hanging post ran %d times", n)
			}

			// Reset.
			id := connectHTTPTool(t, e.srv.URL, e.srv.Key, e.tool.URL)
			write, read, wrote, readFirst = firsts(id, "reset")
			if r := e.srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil); r.Status != 200 {
				t.Fatalf("reset: %d %s", r.Status, r.Body)
			}
			seen(id, 409, "tool_not_configured")
			after("reset", write, read, wrote, readFirst)
		})
	}
}

// A row reserved before rows recorded whether the action was read-only
// (read_only NULL) answers a read-only key as before: refused only where
// the tool still says the action is not read-only, so once the tool is gone
// its answer replays. A cached outcome that does not say (an older build
// put it in Redis) asks the row, and the row's word holds.
func TestReadOnlyKeyAndAnswersThatDoNotSay(t *testing.T) {
	opts := callModes()["postgres+redis"]
	e := setupCalls(t, opts)
	ro, _, err := e.srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	write := callBody(e.id, "/w-old", 1)
	wrote := e.call(write, "w-old")
	if wrote.Status != 200 {
		t.Fatalf("the full key's post: %d %s", wrote.Status, wrote.Body)
	}
	if r := e.srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id), nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	setReadOnly := func(v any) {
		t.Helper()
		if err := e.srv.App.Store.DB().Exec("UPDATE idempotency_keys SET read_only = ? WHERE key = 'w-old'", v).Error; err != nil {
			t.Fatal(err)
		}
	}
	// Replicas with a Redis prefix of their own: the first replica's
	// outcome, which says, is not there.
	opts.DatabaseURL = e.srv.DatabaseURL
	opts.Env = map[string]string{"QUIVER_REDIS_PREFIX": fmt.Sprintf("quivertest:ro-old:%d:", time.Now().UnixNano())}
	call := func(base, apiKey string) *testserver.Response {
		return testserver.Do(t, base, apiKey, "POST", callPath, write, "Idempotency-Key", "w-old")
	}

	setReadOnly(nil) // as reserved before the column
	b := testserver.Start(t, opts)
	if r := call(b.URL, ro); r.Status != 200 || !bytes.Equal(r.Body, wrote.Body) {
		t.Fatalf("the read-only key on a row that does not say, its tool gone: %d %s", r.Status, r.Body)
	}
	// b put the outcome in Redis as the row had it: not saying. The row
	// says now, as a row this build reserved and an older build cached.
	setReadOnly(false)
	c := testserver.Start(t, opts)
	for round := 0; round < 2; round++ { // from Redis and the row, then from c's memory
		wantError(t, call(c.URL, ro), 403, "forbidden")
		if r := call(c.URL, e.srv.Key); r.Status != 200 || !bytes.Equal(r.Body, wrote.Body) {
			t.Fatalf("round %d: the full key's replay: %d %s", round, r.Status, r.Body)
		}
	}
	// c cached the outcome again, saying: another replica has it so.
	setReadOnly(nil)
	d := testserver.Start(t, opts)
	wantError(t, call(d.URL, ro), 403, "forbidden")
	if n := e.tool.count("/w-old"); n != 1 {
		t.Fatalf("the post ran %d times", n)
	}
}
