package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// allPrintable is a key of every character API.md allows, space inside.
func allPrintable() string {
	var b strings.Builder
	for c := byte(0x21); c <= 0x7e; c++ {
		b.WriteByte(c)
		if c == 'A' {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// TestIdempotencyContractKeys: the parts of API.md's idempotency rules
// TestIdempotencyRules leaves out — keys of two accounts, keys that differ
// only in case, every printable character, canonical bodies beyond key order
// and whitespace, the state GET shows, and keys kept across reconfiguration.
func TestIdempotencyContractKeys(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			e := setupCalls(t, opts)

			t.Run("same key in two accounts runs in each", func(t *testing.T) {
				other := e.srv.NewKey("c2-other-" + mode)
				otherID := connectHTTPTool(t, e.srv.URL, other, e.tool.URL)
				first := e.call(callBody(e.id, "/acct2", 1), "k-shared")
				second := testserver.Do(t, e.srv.URL, other, "POST", callPath, callBody(otherID, "/acct2", 1), "Idempotency-Key", "k-shared")
				if first.Status != 200 || second.Status != 200 || second.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("two accounts: %d %s / %d replayed=%q %s", first.Status, first.Body, second.Status, second.Header.Get("Idempotent-Replayed"), second.Body)
				}
				// A different body under the other account's key is its own business.
				third := testserver.Do(t, e.srv.URL, other, "POST", callPath, callBody(otherID, "/acct2", 2), "Idempotency-Key", "k-shared-2")
				if third.Status != 200 {
					t.Fatalf("other account, other key: %d %s", third.Status, third.Body)
				}
				if r := e.call(callBody(e.id, "/acct2", 3), "k-shared-2"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("first account, key the other used: %d %s", r.Status, r.Body)
				}
				if n := e.tool.count("/acct2"); n != 4 {
					t.Fatalf("tool ran %d times, want 4", n)
				}
			})

			t.Run("keys differing in case are different keys", func(t *testing.T) {
				a := e.call(callBody(e.id, "/case", 1), "K-Case")
				b := e.call(callBody(e.id, "/case", 2), "k-case")
				if a.Status != 200 || b.Status != 200 || b.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("case: %d %s / %d %s", a.Status, a.Body, b.Status, b.Body)
				}
				for key, want := range map[string]string{"K-Case": a.JSON()["call_id"].(string), "k-case": b.JSON()["call_id"].(string)} {
					r := e.srv.Do("GET", "/api/v1/idempotency-keys/"+url.PathEscape(key), nil)
					if r.Status != 200 || r.JSON()["key"] != key || r.JSON()["call_id"] != want {
						t.Fatalf("GET %q: %d %s, want call_id %s", key, r.Status, r.Body, want)
					}
				}
			})

			t.Run("every printable character, at 255", func(t *testing.T) {
				for _, key := range []string{allPrintable(), allPrintable() + strings.Repeat("~", 255-len(allPrintable()))} {
					body := callBody(e.id, "/chars", len(key))
					first := e.call(body, key)
					again := e.call(body, key)
					if first.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
						t.Fatalf("key of %d chars: %d %s / %d replayed=%q", len(key), first.Status, first.Body, again.Status, again.Header.Get("Idempotent-Replayed"))
					}
					r := e.srv.Do("GET", "/api/v1/idempotency-keys/"+url.PathEscape(key), nil)
					if r.Status != 200 || r.JSON()["key"] != key || r.JSON()["state"] != "succeeded" {
						t.Fatalf("GET key of %d chars: %d %s", len(key), r.Status, r.Body)
					}
				}
				if n := e.tool.count("/chars"); n != 2 {
					t.Fatalf("tool ran %d times, want 2", n)
				}
			})

			t.Run("canonical bodies", func(t *testing.T) {
				raw := func(body string) string {
					return fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/canon","body":%s}}`, e.id, body)
				}
				same := [][2]string{
					{`"\ud83d\ude00"`, `"😀"`},
					{`"a\/b"`, `"a/b"`},
					{`"\u0041\n"`, `"A\u000a"`},
					{`{"\u00e9":1,"f":2}`, `{"f":2,"é":1}`},
					{`{"b":[1, {"y":1,"x":2}],"a":null}`, "{\"a\" :null,\r\n\"b\":[1,{\"x\":2,\"y\":1}]}"},
				}
				for i, p := range same {
					key := fmt.Sprintf("k-canon-same-%d", i)
					first := e.srv.Do("POST", callPath, raw(p[0]), "Idempotency-Key", key)
					again := e.srv.Do("POST", callPath, raw(p[1]), "Idempotency-Key", key)
					if first.Status != 200 || again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" {
						t.Fatalf("%s then %s: %d %s / %d %s", p[0], p[1], first.Status, first.Body, again.Status, again.Body)
					}
				}
				differ := [][2]string{
					{`0`, `-0`},
					{`1e2`, `1e+2`},
					{`10`, `010e0`},
					{`"a"`, `"A"`},
					{`[1,2]`, `[2,1]`},
					{`{}`, `[]`},
					{`null`, `{}`},
				}
				for i, p := range differ {
					key := fmt.Sprintf("k-canon-differ-%d", i)
					first := e.srv.Do("POST", callPath, raw(p[0]), "Idempotency-Key", key)
					if first.Status != 200 {
						t.Fatalf("%s: %d %s", p[0], first.Status, first.Body)
					}
					r := e.srv.Do("POST", callPath, raw(p[1]), "Idempotency-Key", key)
					if r.Status == 400 && r.JSON()["error"] == "invalid_json" {
						continue // not JSON at all (010e0): never the same body
					}
					wantError(t, r, 409, "idempotency_key_reused")
				}
				// A duplicate member, however it is spelled, at any depth.
				for _, b := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[{"x":{"k":1,"k":1}}]`} {
					wantError(t, e.srv.Do("POST", callPath, raw(b), "Idempotency-Key", "k-canon-dup"), 400, "invalid_json")
				}
				wantError(t, e.srv.Do("POST", callPath, fmt.Sprintf(`{"tool":%d,"action":"post","\u0074ool":%d,"arguments":{}}`, e.id, e.id), "Idempotency-Key", "k-canon-dup"), 400, "invalid_json")
			})

			t.Run("key state shows the call", func(t *testing.T) {
				before := time.Now().UTC().Truncate(time.Second)
				first := e.call(callBody(e.id, "/state", 1), "k-state")
				r := e.srv.Do("GET", "/api/v1/idempotency-keys/k-state/", nil)
				m := r.JSON()
				if r.Status != 200 || m["key"] != "k-state" || m["state"] != "succeeded" || m["action"] != "post" ||
					m["tool"] != float64(e.id) || m["call_id"] != first.JSON()["call_id"] {
					t.Fatalf("key state: %d %s (call %s)", r.Status, r.Body, first.Body)
				}
				created, err1 := time.Parse(time.RFC3339, fmt.Sprint(m["created_at"]))
				expires, err2 := time.Parse(time.RFC3339, fmt.Sprint(m["expires_at"]))
				if err1 != nil || err2 != nil || created.Before(before.Add(-2*time.Second)) || created.After(time.Now().Add(2*time.Second)) {
					t.Fatalf("key times: %s", r.Body)
				}
				if d := expires.Sub(created); d < 24*time.Hour-2*time.Second || d > 24*time.Hour+2*time.Second {
					t.Fatalf("expires %v after creation, want 24h: %s", d, r.Body)
				}
				if !strings.HasSuffix(fmt.Sprint(m["created_at"]), "Z") || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
					t.Fatalf("key state form: %s %v", r.Body, r.Header)
				}
				wantError(t, e.srv.Do("GET", "/api/v1/idempotency-keys/never-used", nil), 404, "not_found")
			})

			t.Run("retryable action with a key replays", func(t *testing.T) {
				get := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/getkey"}}
				first := e.call(get, "k-get")
				again := e.call(get, "k-get")
				if first.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
					t.Fatalf("get with a key: %d %s / replayed=%q %s", first.Status, first.Body, again.Header.Get("Idempotent-Replayed"), again.Body)
				}
				if n := e.tool.count("/getkey"); n != 1 {
					t.Fatalf("tool ran %d times, want 1", n)
				}
				get["arguments"] = map[string]any{"path": "/getkey2"}
				wantError(t, e.call(get, "k-get"), 409, "idempotency_key_reused")
			})

			t.Run("in progress says when to retry", func(t *testing.T) {
				body := callBody(e.id, "/slow?ms=700", 1)
				done := make(chan *testserver.Response, 1)
				go func() { done <- e.call(body, "k-slow2") }()
				testserver.Eventually(t, 3*time.Second, "the slow call to reach the tool", func() bool {
					return e.tool.count("/slow") == 1
				})
				r := e.call(body, "k-slow2")
				wantError(t, r, 409, "request_in_progress")
				if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
					t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
				}
				wantError(t, e.call(callBody(e.id, "/slow?ms=700", 2), "k-slow2"), 409, "idempotency_key_reused")
				first := <-done
				if again := e.call(body, "k-slow2"); first.Status != 200 || !bytes.Equal(again.Body, first.Body) {
					t.Fatalf("after the slow call: %d %s / %s", first.Status, first.Body, again.Body)
				}
			})

			t.Run("reconfiguration keeps outcomes and frees refused keys", func(t *testing.T) {
				id := connectHTTPTool(t, e.srv.URL, e.srv.Key, e.tool.URL)
				first := e.call(callBody(id, "/reconf", 1), "k-reconf")
				reset := fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id)
				if r := e.srv.Do("POST", reset, nil); r.Status != 200 {
					t.Fatalf("reset: %d %s", r.Status, r.Body)
				}
				again := e.call(callBody(id, "/reconf", 1), "k-reconf")
				if again.Status != 200 || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("replay after reset: %d %s", again.Status, again.Body)
				}
				wantError(t, e.call(callBody(id, "/reconf", 2), "k-reconf-2"), 409, "tool_not_configured")
				path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id)
				e.srv.Do("POST", path, map[string]any{"user_response": map[string]any{"base_url": e.tool.URL}})
				if r := e.srv.Do("POST", path, map[string]any{"user_response": map[string]any{"auth_type": "none"}}); r.Status != 200 {
					t.Fatalf("reconfigure: %d %s", r.Status, r.Body)
				}
				if r := e.call(callBody(id, "/reconf", 2), "k-reconf-2"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("after reconfiguring: %d %s", r.Status, r.Body)
				}
				if n := e.tool.count("/reconf"); n != 2 {
					t.Fatalf("tool ran %d times, want 2", n)
				}
			})
		})
	}
}
