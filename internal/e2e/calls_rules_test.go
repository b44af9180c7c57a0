package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// callModes are the deployments every idempotency rule is proved on.
func callModes() map[string]testserver.Options {
	return map[string]testserver.Options{
		"postgres+redis": {Postgres: true, RedisURL: "redis://" + testdb.RedisAddr() + "/0"},
		"postgres":       {Postgres: true},
		"embedded":       {},
	}
}

type callEnv struct {
	srv  *testserver.Server
	tool *toolServer
	id   int64
}

func setupCalls(t *testing.T, opts testserver.Options) *callEnv {
	t.Helper()
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	if opts.Env["QUIVER_CALL_TIMEOUT"] == "" {
		opts.Env["QUIVER_CALL_TIMEOUT"] = "2s"
	}
	if opts.Env["QUIVER_LEASE_GRACE"] == "" {
		opts.Env["QUIVER_LEASE_GRACE"] = "1s"
	}
	srv := testserver.Start(t, opts)
	tool := startToolServer(t)
	return &callEnv{srv: srv, tool: tool, id: connectHTTPTool(t, srv.URL, srv.Key, tool.URL)}
}

func (e *callEnv) call(body any, key ...string) *testserver.Response {
	var h []string
	for _, k := range key {
		h = append(h, "Idempotency-Key", k)
	}
	return e.srv.Do("POST", callPath, body, h...)
}

func wantError(t *testing.T, r *testserver.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.JSON()["error"] != code {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

func TestIdempotencyRules(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			e := setupCalls(t, opts)

			t.Run("replay is byte for byte and runs once", func(t *testing.T) {
				first := e.call(callBody(e.id, "/replay", map[string]any{"to": "a@b.c"}), "k-replay")
				if first.Status != 200 || first.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("first: %d %s", first.Status, first.Body)
				}
				// Same body with keys reordered and other whitespace.
				again := e.srv.Do("POST", callPath, fmt.Sprintf(`{ "arguments" : {"body":{"to":"a@b.c"}, "path":"/replay"},
					"action":"post", "tool": %d }`, e.id), "Idempotency-Key", "k-replay")
				if again.Status != 200 || !bytes.Equal(again.Body, first.Body) {
					t.Fatalf("replay differs: %d %s vs %s", again.Status, again.Body, first.Body)
				}
				if again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
					t.Fatalf("replay headers: %v", again.Header)
				}
				if again.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") {
					t.Fatal("replay reused the first X-Request-Id")
				}
				if n := e.tool.count("/replay"); n != 1 {
					t.Fatalf("tool ran %d times", n)
				}
			})

			t.Run("different body is 409 reused", func(t *testing.T) {
				e.call(callBody(e.id, "/reuse", 1), "k-reuse")
				wantError(t, e.call(callBody(e.id, "/reuse", 2), "k-reuse"), 409, "idempotency_key_reused")
				big1 := fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/huge","body":12345678901234567890}}`, e.id)
				big2 := strings.Replace(big1, "890}", "891}", 1)
				if r := e.srv.Do("POST", callPath, big1, "Idempotency-Key", "k-huge"); r.Status != 200 {
					t.Fatalf("huge: %d %s", r.Status, r.Body)
				}
				wantError(t, e.srv.Do("POST", callPath, big2, "Idempotency-Key", "k-huge"), 409, "idempotency_key_reused")
				if n := e.tool.count("/reuse") + e.tool.count("/huge"); n != 2 {
					t.Fatalf("tool ran %d times, want 2", n)
				}
			})

			t.Run("numbers by their literal, strings by their value", func(t *testing.T) {
				raw := func(path, literal string) string {
					return fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":%q,"body":%s}}`, e.id, path, literal)
				}
				for i, pair := range [][2]string{{"1", "1.0"}, {"100", "1e2"}, {"1e2", "1E2"}, {"0.5", "5e-1"}} {
					key, path := fmt.Sprintf("k-num-%d", i), fmt.Sprintf("/num-%d", i)
					if r := e.srv.Do("POST", callPath, raw(path, pair[0]), "Idempotency-Key", key); r.Status != 200 {
						t.Fatalf("%s: %d %s", pair[0], r.Status, r.Body)
					}
					wantError(t, e.srv.Do("POST", callPath, raw(path, pair[1]), "Idempotency-Key", key), 409, "idempotency_key_reused")
				}
				first := e.srv.Do("POST", callPath, raw("/str", `"caf\u00e9"`), "Idempotency-Key", "k-str")
				again := e.srv.Do("POST", callPath, raw("/str", `"café"`), "Idempotency-Key", "k-str")
				if first.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
					t.Fatalf("an escaped and a literal é are the same string: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
				}
				if n := e.tool.count("/str"); n != 1 {
					t.Fatalf("/str ran %d times", n)
				}
			})

			t.Run("HTTP trims a key's outer spaces", func(t *testing.T) {
				// Go's client trims header values itself: write the request by hand.
				body := callBody(e.id, "/trim", 1)
				payload := mustJSON(body)
				conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nX-API-KEY: %s\r\nIdempotency-Key:  k-trim \t\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
					callPath, e.srv.Key, len(payload), payload)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("first, key sent as \" k-trim \\t\": %v %v", resp, err)
				}
				if r := e.call(body, "k-trim"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("k-trim after \"k-trim \": %d replayed=%q", r.Status, r.Header.Get("Idempotent-Replayed"))
				}
				if r := e.srv.Do("GET", "/api/v1/idempotency-keys/k-trim", nil); r.Status != 200 || r.JSON()["key"] != "k-trim" {
					t.Fatalf("key state: %d %s", r.Status, r.Body)
				}
			})

			t.Run("tool by name is another body", func(t *testing.T) {
				// tool: "http-request" names the same tool, yet is a different body.
				e.call(callBody(e.id, "/name", 1), "k-name")
				r := e.call(map[string]any{"tool": "http-request", "action": "post", "arguments": map[string]any{"path": "/name", "body": 1}}, "k-name")
				wantError(t, r, 409, "idempotency_key_reused")
			})

			t.Run("non-retryable action needs a key", func(t *testing.T) {
				wantError(t, e.call(callBody(e.id, "/nokey", 1)), 400, "idempotency_key_required")
				if e.tool.count("/nokey") != 0 {
					t.Fatal("tool ran without a key")
				}
				get := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/retryable"}}
				for i := 0; i < 2; i++ {
					if r := e.call(get); r.Status != 200 {
						t.Fatalf("retryable without key: %d %s", r.Status, r.Body)
					}
				}
				if e.tool.count("/retryable") != 2 {
					t.Fatal("retryable calls without a key should each run")
				}
			})

			t.Run("invalid keys", func(t *testing.T) {
				body := callBody(e.id, "/badkey", 1)
				if r := e.call(body, strings.Repeat("k", 255)); r.Status != 200 {
					t.Fatalf("255-char key: %d %s", r.Status, r.Body)
				}
				wantError(t, e.call(body, strings.Repeat("k", 256)), 400, "invalid_idempotency_key")
				wantError(t, e.call(body, "clé"), 400, "invalid_idempotency_key")
				wantError(t, e.call(body, "tab\there"), 400, "invalid_idempotency_key")
				wantError(t, e.call(body, "a", "b"), 400, "invalid_idempotency_key")
				wantError(t, e.call(body, ""), 400, "invalid_idempotency_key")
				if r := e.call(body, "inner spaces are fine"); r.Status != 200 {
					t.Fatalf("inner spaces: %d %s", r.Status, r.Body)
				}
				if e.tool.count("/badkey") != 2 {
					t.Fatalf("tool ran %d times, want 2", e.tool.count("/badkey"))
				}
			})

			t.Run("bad JSON", func(t *testing.T) {
				wantError(t, e.srv.Do("POST", callPath, `{"tool":1,"tool":2}`, "Idempotency-Key", "k-dup"), 400, "invalid_json")
				wantError(t, e.srv.Do("POST", callPath, `[1]`, "Idempotency-Key", "k-dup"), 400, "invalid_json")
				wantError(t, e.srv.Do("POST", callPath, `{"tool":`, "Idempotency-Key", "k-dup"), 400, "invalid_json")
				wantError(t, e.srv.Do("POST", callPath, `{"tool":[1],"action":"post"}`, "Idempotency-Key", "k-dup"), 422, "validation_error")
			})

			t.Run("pre-dispatch rejection releases the key", func(t *testing.T) {
				bad := map[string]any{"tool": e.id, "action": "post", "arguments": map[string]any{"body": 1}} // no path
				wantError(t, e.call(bad, "k-release"), 422, "invalid_arguments")
				wantError(t, e.call(map[string]any{"tool": 999999, "action": "post", "arguments": map[string]any{"path": "/x"}}, "k-release"), 404, "not_found")
				wantError(t, e.call(map[string]any{"tool": e.id, "action": "nope", "arguments": map[string]any{}}, "k-release"), 404, "not_found")
				if r := e.call(callBody(e.id, "/release", 1), "k-release"); r.Status != 200 {
					t.Fatalf("corrected call: %d %s", r.Status, r.Body)
				}
				if e.tool.count("/release") != 1 {
					t.Fatal("corrected call did not run once")
				}
			})

			t.Run("unreachable tool releases the key", func(t *testing.T) {
				dead := httpDeadURL(t)
				id := connectHTTPTool(t, e.srv.URL, e.srv.Key, dead)
				wantError(t, e.call(callBody(id, "/x", 1), "k-unreach"), 502, "tool_unreachable")
				// The key is free: the same key on a reachable tool runs.
				if r := e.call(callBody(id, "/x", 1), "k-unreach"); r.Status != 502 {
					t.Fatalf("second try: %d %s", r.Status, r.Body)
				}
				if r := e.srv.Do("GET", "/api/v1/idempotency-keys/k-unreach", nil); r.Status != 404 {
					t.Fatalf("released key still shows: %d %s", r.Status, r.Body)
				}
			})

			t.Run("tool error is a stored 200", func(t *testing.T) {
				first := e.call(callBody(e.id, "/fail", 1), "k-fail")
				if first.Status != 200 || first.JSON()["is_error"] != true {
					t.Fatalf("tool error: %d %s", first.Status, first.Body)
				}
				again := e.call(callBody(e.id, "/fail", 1), "k-fail")
				if !bytes.Equal(again.Body, first.Body) || e.tool.count("/fail") != 1 {
					t.Fatalf("tool error not replayed: %s / %s, ran %d", again.Body, first.Body, e.tool.count("/fail"))
				}
			})

			t.Run("unknown outcome is terminal", func(t *testing.T) {
				wantError(t, e.call(callBody(e.id, "/drop", 1), "k-drop"), 504, "tool_outcome_unknown")
				wantError(t, e.call(callBody(e.id, "/drop", 1), "k-drop"), 409, "tool_outcome_unknown")
				wantError(t, e.call(callBody(e.id, "/hang", 1), "k-hang"), 504, "tool_outcome_unknown")
				wantError(t, e.call(callBody(e.id, "/hang", 1), "k-hang"), 409, "tool_outcome_unknown")
				if e.tool.count("/drop") != 1 || e.tool.count("/hang") != 1 {
					t.Fatalf("ran drop %d, hang %d times", e.tool.count("/drop"), e.tool.count("/hang"))
				}
				if r := e.srv.Do("GET", "/api/v1/idempotency-keys/k-drop", nil); r.JSON()["state"] != "outcome_unknown" {
					t.Fatalf("key state: %s", r.Body)
				}
				// The upstream's own idempotency key in the arguments, on a
				// kept-alive connection: net/http took the POST for safe to
				// send again when the connection broke, and it ran twice.
				for _, header := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
					before := e.tool.count("/drop")
					if r := e.call(map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/warm"}}); r.Status != 200 {
						t.Fatalf("warm: %d %s", r.Status, r.Body)
					}
					body := callBody(e.id, "/drop", 1)
					body["arguments"].(map[string]any)["headers"] = map[string]any{header: "upstream-1"}
					wantError(t, e.call(body, "k-drop-"+header), 504, "tool_outcome_unknown")
					if n := e.tool.count("/drop") - before; n != 1 {
						t.Fatalf("with %s: ran %d times", header, n)
					}
				}
			})

			t.Run("in progress, and a client that leaves does not cancel", func(t *testing.T) {
				body := callBody(e.id, "/slow?ms=800", 1)
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+callPath, strings.NewReader(mustJSON(body)))
				req.Header.Set("X-API-KEY", e.srv.Key)
				req.Header.Set("Idempotency-Key", "k-slow")
				if _, err := http.DefaultClient.Do(req); err == nil {
					t.Fatal("the slow call answered before the client gave up")
				}
				r := e.call(body, "k-slow")
				wantError(t, r, 409, "request_in_progress")
				if k := e.srv.Do("GET", "/api/v1/idempotency-keys/k-slow", nil); k.Status != 200 || k.JSON()["state"] != "in_progress" {
					t.Fatalf("key while in flight: %d %s", k.Status, k.Body)
				}
				if r.Header.Get("Retry-After") == "" {
					t.Fatal("no Retry-After on request_in_progress")
				}
				var last *testserver.Response
				testserver.Eventually(t, 5*time.Second, "the slow call to complete", func() bool {
					last = e.call(body, "k-slow")
					return last.Status == 200
				})
				if last.Header.Get("Idempotent-Replayed") != "true" || e.tool.count("/slow") != 1 {
					t.Fatalf("slow call: replayed=%q ran %d", last.Header.Get("Idempotent-Replayed"), e.tool.count("/slow"))
				}
			})

			t.Run("odd payloads replay exactly", func(t *testing.T) {
				raw := fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/raw","body":{"html":"<a href=\"x\">&amp;</a>","text":"héllo — 日本 \u2028","n":123456789012345678901234567890,"f":1.50,"e":1e400}}}`, e.id)
				first := e.srv.Do("POST", callPath, raw, "Idempotency-Key", "k-odd")
				if first.Status != 200 {
					t.Fatalf("odd: %d %s", first.Status, first.Body)
				}
				if !bytes.Contains(first.Body, []byte("123456789012345678901234567890")) {
					t.Fatalf("huge integer lost: %s", first.Body)
				}
				again := e.srv.Do("POST", callPath, raw, "Idempotency-Key", "k-odd")
				if !bytes.Equal(first.Body, again.Body) {
					t.Fatalf("odd payload replay differs:\n%s\n%s", first.Body, again.Body)
				}
			})

			t.Run("8 MiB boundary", func(t *testing.T) {
				// A server of its own, whose calls may take 10 s rather than the
				// 2 s the others' hangs are cut at: an 8 MiB answer under -race
				// on a busy machine can take longer than that.
				big := opts
				big.Env = map[string]string{"QUIVER_CALL_TIMEOUT": "10s"}
				e := setupCalls(t, big)
				// The http-request result wraps the body in {status, headers, body}:
				// measure the wrapper once, then size the body so the result is
				// exactly 8 MiB.
				probe := e.call(callBody(e.id, fmt.Sprintf("/big?n=%d", 8<<20-4096), 1), "k-8m-probe")
				under := 8<<20 - 4096 + (8<<20 - resultLen(t, probe.Body))
				r := e.call(callBody(e.id, fmt.Sprintf("/big?n=%d", under), 1), "k-8m")
				if r.Status != 200 || r.JSON()["is_error"] != false {
					t.Fatalf("8 MiB result: %d is_error=%v", r.Status, r.JSON()["is_error"])
				}
				again := e.call(callBody(e.id, fmt.Sprintf("/big?n=%d", under), 1), "k-8m")
				if !bytes.Equal(again.Body, r.Body) {
					t.Fatal("8 MiB replay differs")
				}
				over := e.call(callBody(e.id, fmt.Sprintf("/big?n=%d", under+1), 1), "k-8m+1")
				res, _ := over.JSON()["result"].(map[string]any)
				if over.Status != 200 || over.JSON()["is_error"] != true || res["error"] != "result_too_large" {
					t.Fatalf("over 8 MiB: %d %.300s", over.Status, over.Body)
				}
				if again := e.call(callBody(e.id, fmt.Sprintf("/big?n=%d", under+1), 1), "k-8m+1"); !bytes.Equal(again.Body, over.Body) {
					t.Fatal("result_too_large not replayed")
				}
			})

			t.Run("replay after the tool is deleted", func(t *testing.T) {
				id := connectHTTPTool(t, e.srv.URL, e.srv.Key, e.tool.URL)
				first := e.call(callBody(id, "/deleted", 1), "k-deleted")
				if r := e.srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
					t.Fatalf("delete: %d", r.Status)
				}
				again := e.call(callBody(id, "/deleted", 1), "k-deleted")
				if again.Status != 200 || !bytes.Equal(again.Body, first.Body) {
					t.Fatalf("replay after delete: %d %s", again.Status, again.Body)
				}
			})

			t.Run("keys belong to the account", func(t *testing.T) {
				e.call(callBody(e.id, "/acct", 1), "k-acct")
				other := e.srv.NewKey("other-" + mode)
				r := testserver.Do(t, e.srv.URL, other, "GET", "/api/v1/idempotency-keys/k-acct", nil)
				wantError(t, r, 404, "not_found")
				r = testserver.Do(t, e.srv.URL, e.srv.Key, "GET", "/api/v1/idempotency-keys/"+url.PathEscape("k-acct"), nil)
				if r.Status != 200 || r.JSON()["state"] != "succeeded" || r.JSON()["action"] != "post" {
					t.Fatalf("key state: %d %s", r.Status, r.Body)
				}
				e.call(callBody(e.id, "/slash", 1), "a/b c")
				r = testserver.Do(t, e.srv.URL, e.srv.Key, "GET", "/api/v1/idempotency-keys/"+url.PathEscape("a/b c"), nil)
				if r.Status != 200 {
					t.Fatalf("escaped key: %d %s", r.Status, r.Body)
				}
			})

			// Calls with and without a key, listed straight after: all
			// there, in the order made, paged without repeats. A call
			// without a key used to reach the log up to 100 ms after its
			// answer, and after a keyed call made later, whose entry is
			// written with its outcome.
			t.Run("call log right after", func(t *testing.T) {
				var made []string
				for i, key := range []string{"", "k-order-1", "", "", "k-order-2", ""} {
					body := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/order"}}
					var r *testserver.Response
					if key == "" {
						r = e.call(body)
					} else {
						r = e.call(callBody(e.id, "/order", i), key)
					}
					if r.Status != 200 {
						t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
					}
					made = append(made, r.JSON()["call_id"].(string))
				}
				seen := map[string]int{}
				var listed []string
				for cursor := ""; ; {
					r := e.srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=4&cursor=%s", e.id, cursor), nil)
					for _, c := range r.JSON()["calls"].([]any) {
						id := c.(map[string]any)["call_id"].(string)
						if _, dup := seen[id]; dup {
							t.Fatalf("%s listed twice", id)
						}
						seen[id] = len(listed)
						listed = append(listed, id)
					}
					if cursor, _ = r.JSON()["next_cursor"].(string); cursor == "" {
						break
					}
				}
				for i, id := range made {
					at, ok := seen[id]
					if !ok {
						t.Fatalf("%s is not in the log right after its answer", id)
					}
					if i > 0 && at < seen[made[i-1]] {
						t.Fatalf("%s listed before %s, made before it (log %v)", id, made[i-1], listed)
					}
				}
			})

			t.Run("call log", func(t *testing.T) {
				testserver.Eventually(t, 3*time.Second, "the call log", func() bool {
					r := e.srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", e.id), nil)
					calls, _ := r.JSON()["calls"].([]any)
					outcomes := map[string]bool{}
					for _, c := range calls {
						outcomes[c.(map[string]any)["outcome"].(string)] = true
					}
					return outcomes["succeeded"] && outcomes["tool_error"] && outcomes["outcome_unknown"]
				})
			})
		})
	}
}
