package e2e

// Tests of the call engine's audit findings: an outcome the database could
// not store at first, bodies that differ only in bytes a decoder would
// replace, and request fields that must match exactly.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// blipEnv is two replicas on one database: a reaches it through a proxy the
// test can cut, b directly.
type blipEnv struct {
	a, b *testserver.Server
	px   *tcpProxy
	tool *toolServer
	id   int64
}

func setupBlip(t *testing.T, redis bool) *blipEnv {
	t.Helper()
	dbURL := testdb.Postgres(t, "blip")
	u, _ := url.Parse(dbURL)
	px := startProxy(t, u.Host)
	u.Host = px.Addr()
	env := map[string]string{"QUIVER_CALL_TIMEOUT": "2s", "QUIVER_LEASE_GRACE": "1s"}
	redisURL := ""
	if redis {
		redisURL = sharedRedisURL()
		// The replicas name the database differently (proxy or not): give
		// them one Redis prefix explicitly.
		env["QUIVER_REDIS_PREFIX"] = fmt.Sprintf("quivertest:blip:%d:", time.Now().UnixNano())
	}
	a := testserver.Start(t, testserver.Options{DatabaseURL: u.String(), RedisURL: redisURL, Env: env})
	b := testserver.Start(t, testserver.Options{DatabaseURL: dbURL, RedisURL: redisURL, Env: env})
	tool := startToolServer(t)
	return &blipEnv{a: a, b: b, px: px, tool: tool, id: connectHTTPTool(t, a.URL, a.Key, tool.URL)}
}

// answer is an HTTP answer, or the error of a request sent off the test's
// goroutine.
type answer struct {
	status int
	body   []byte
	err    error
}

// postAsync sends a call and delivers its answer on the returned channel.
func postAsync(base, apiKey string, body any, idemKey string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+callPath, strings.NewReader(mustJSON(body)))
		req.Header.Set("X-API-KEY", apiKey)
		req.Header.Set("Idempotency-Key", idemKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- answer{status: resp.StatusCode, body: b, err: err}
	}()
	return ch
}

func keyState(t *testing.T, s *testserver.Server, key string) string {
	t.Helper()
	r := s.Do("GET", "/api/v1/idempotency-keys/"+url.PathEscape(key), nil)
	st, _ := r.JSON()["state"].(string)
	return st
}

// TestOutcomeStoredAcrossDatabaseBlip: a 200 whose first Complete failed is
// stored once the database is back within the lease, and every replica
// replays it; past the lease, every replica agrees the outcome is unknown.
func TestOutcomeStoredAcrossDatabaseBlip(t *testing.T) {
	for mode, redis := range map[string]bool{"postgres": false, "postgres+redis": true} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setupBlip(t, redis)

			t.Run("short blip stores the 200", func(t *testing.T) {
				body := callBody(e.id, "/slow?ms=400", map[string]any{"op": "short"})
				ch := postAsync(e.a.URL, e.a.Key, body, "k-blip-short")
				testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return e.tool.count("/slow") == 1 })
				mark := len(e.a.LogText())
				e.px.setCut(true)
				// Restore the database once storing the outcome has failed:
				// well within the 3 s lease.
				testserver.Eventually(t, 5*time.Second, "storing the outcome to fail", func() bool {
					return strings.Contains(e.a.LogText()[mark:], "storing a call outcome failed")
				})
				e.px.setCut(false)
				first := <-ch
				if first.err != nil || first.status != 200 {
					t.Fatalf("first answer: %d %s %v", first.status, first.body, first.err)
				}
				for name, s := range map[string]*testserver.Server{"a": e.a, "b": e.b} {
					r := s.Do("POST", callPath, body, "Idempotency-Key", "k-blip-short")
					if r.Status != 200 || !bytes.Equal(r.Body, first.body) || r.Header.Get("Idempotent-Replayed") != "true" {
						t.Fatalf("replica %s: %d %s, want the first 200 replayed: %s", name, r.Status, r.Body, first.body)
					}
					if st := keyState(t, s, "k-blip-short"); st != "succeeded" {
						t.Fatalf("replica %s: key state %q, want succeeded", name, st)
					}
				}
				if n := e.tool.count("/slow"); n != 1 {
					t.Fatalf("tool ran %d times", n)
				}
			})

			t.Run("outage past the lease is outcome unknown everywhere", func(t *testing.T) {
				body := callBody(e.id, "/slow/long?ms=400", map[string]any{"op": "long"})
				before := e.tool.count("/slow")
				ch := postAsync(e.a.URL, e.a.Key, body, "k-blip-long")
				testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return e.tool.count("/slow") == before+1 })
				e.px.setCut(true)
				var first answer
				select {
				case first = <-ch:
				case <-time.After(15 * time.Second):
					t.Fatal("no answer while the database was down")
				}
				// Replica b, on the database directly, sweeps the expired lease.
				testserver.Eventually(t, 10*time.Second, "replica b to see the key as outcome_unknown", func() bool {
					return keyState(t, e.b, "k-blip-long") == "outcome_unknown"
				})
				e.px.setCut(false)
				if first.err != nil || first.status != 504 || !strings.Contains(string(first.body), `"tool_outcome_unknown"`) {
					t.Fatalf("first answer: %d %s %v, want 504 tool_outcome_unknown", first.status, first.body, first.err)
				}
				for name, s := range map[string]*testserver.Server{"a": e.a, "b": e.b} {
					var r *testserver.Response
					testserver.Eventually(t, 10*time.Second, "replica "+name+" to reach the database", func() bool {
						r = s.Do("POST", callPath, body, "Idempotency-Key", "k-blip-long")
						return r.Status != 503
					})
					wantError(t, r, 409, "tool_outcome_unknown")
					if st := keyState(t, s, "k-blip-long"); st != "outcome_unknown" {
						t.Fatalf("replica %s: key state %q, want outcome_unknown", name, st)
					}
				}
				if n := e.tool.count("/slow"); n != before+1 {
					t.Fatalf("tool ran %d times", n-before)
				}
			})
		})
	}
}

// TestBodiesDifferByTheirBytes: a body that is not valid UTF-8 is not
// JSON, and one holding a lone surrogate is not text.
func TestBodiesDifferByTheirBytes(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setupCalls(t, opts)
			raw := func(path, s string) string {
				return fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":%q,"body":"%s"}}`, e.id, path, s)
			}

			t.Run("invalid UTF-8 is invalid JSON", func(t *testing.T) {
				wantError(t, e.srv.Do("POST", callPath, raw("/utf", "\xff"), "Idempotency-Key", "k-utf"), 400, "invalid_json")
				wantError(t, e.srv.Do("POST", callPath, raw("/utf", "\xfe"), "Idempotency-Key", "k-utf"), 400, "invalid_json")
				wantError(t, e.srv.Do("POST", callPath, raw("/utf", "a\xed\xa0\x80"), "Idempotency-Key", "k-utf"), 400, "invalid_json")
				if n := e.tool.count("/utf"); n != 0 {
					t.Fatalf("tool ran %d times", n)
				}
				// Nothing was reserved: the key is free for a valid body.
				if r := e.srv.Do("POST", callPath, raw("/utf", "ÿ"), "Idempotency-Key", "k-utf"); r.Status != 200 {
					t.Fatalf("valid body: %d %s", r.Status, r.Body)
				}
			})

			t.Run("a lone surrogate is not text", func(t *testing.T) {
				// The tool would get U+FFFD in its place: refused as on every
				// other endpoint, before the key is reserved.
				for _, s := range []string{`\ud800`, `\uDBFF`, `a\udc00`, `\ude00\ud83d`} {
					wantError(t, e.srv.Do("POST", callPath, raw("/surrogate", s), "Idempotency-Key", "k-sur"), 400, "invalid_json")
					wantError(t, e.srv.Do("POST", callPath, raw("/surrogate", s)), 400, "invalid_json")
				}
				if n := e.tool.count("/surrogate"); n != 0 {
					t.Fatalf("tool ran %d times", n)
				}
				// A pair is one character, and an escaped backslash is not an
				// escape; the key was never taken.
				for _, s := range []string{`\ud83d\ude00`, `\\ud800`} {
					if r := e.srv.Do("POST", callPath, raw("/surrogate", s), "Idempotency-Key", "k-sur-"+s); r.Status != 200 {
						t.Fatalf("%s: %d %s", s, r.Status, r.Body)
					}
				}
				if r := e.srv.Do("POST", callPath, raw("/surrogate", "x"), "Idempotency-Key", "k-sur"); r.Status != 200 {
					t.Fatalf("the key after refusals: %d %s", r.Status, r.Body)
				}
			})
		})
	}
}

// TestCallFieldsMatchExactly: only "tool", "action" and "arguments" are the
// call's fields; a field of the wrong type is a plain 422, and never hides
// that the key was used with another body.
func TestCallFieldsMatchExactly(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setupCalls(t, opts)

			t.Run("other spellings are unknown fields", func(t *testing.T) {
				r := e.srv.Do("POST", callPath, fmt.Sprintf(`{"tool":999999,"TOOL":%d,"action":"post","arguments":{"path":"/case"}}`, e.id),
					"Idempotency-Key", "k-case")
				wantError(t, r, 404, "not_found")
				r = e.srv.Do("POST", callPath, fmt.Sprintf(`{"Tool":%d,"Action":"post","Arguments":{"path":"/case"}}`, e.id), "Idempotency-Key", "k-case")
				wantError(t, r, 422, "validation_error")
				r = e.srv.Do("POST", callPath, fmt.Sprintf(`{"tool":%d,"Action":"post","arguments":{"path":"/case"}}`, e.id), "Idempotency-Key", "k-case")
				wantError(t, r, 422, "validation_error")
				if f, _ := r.JSON()["fields"].(map[string]any); f["action"] != "is required" {
					t.Fatalf("fields: %s", r.Body)
				}
				// An escaped spelling of the same name is the same field.
				r = e.srv.Do("POST", callPath, fmt.Sprintf(`{"tool":%d,"\u0061ction":"post","arguments":{"path":"/case"}}`, e.id), "Idempotency-Key", "k-case")
				if r.Status != 200 {
					t.Fatalf("escaped field name: %d %s", r.Status, r.Body)
				}
				if n := e.tool.count("/case"); n != 1 {
					t.Fatalf("tool ran %d times", n)
				}
			})

			t.Run("wrong types get field messages", func(t *testing.T) {
				for body, field := range map[string]string{
					`{"tool":%d,"action":5}`:                     "action",
					`{"tool":%d,"action":["post"]}`:              "action",
					`{"tool":1.5,"action":"post","x":%d}`:        "tool",
					`{"tool":true,"action":"post","x":%d}`:       "tool",
					`{"tool":{"id":%d},"action":"post"}`:         "tool",
					`{"tool":99999999999999999999,"x":%d}`:       "tool",
					`{"tool":%d,"action":"post","arguments":[]}`: "arguments",
				} {
					r := e.srv.Do("POST", callPath, fmt.Sprintf(body, e.id), "Idempotency-Key", "k-types")
					if r.Status != 422 {
						t.Fatalf("%s: %d %s", body, r.Status, r.Body)
					}
					f, _ := r.JSON()["fields"].(map[string]any)
					if msg, _ := f[field].(string); msg == "" {
						t.Fatalf("%s: no message for %q: %s", body, field, r.Body)
					}
					for _, leak := range []string{"Go ", "struct", "int64", "json:", "unmarshal"} {
						if strings.Contains(string(r.Body), leak) {
							t.Fatalf("%s: the answer leaks %q: %s", body, leak, r.Body)
						}
					}
				}
				r := e.srv.Do("POST", callPath, fmt.Sprintf(`{"tool":%d,"action":5}`, e.id), "Idempotency-Key", "k-types")
				if f, _ := r.JSON()["fields"].(map[string]any); f["action"] != "must be a string" {
					t.Fatalf("action message: %s", r.Body)
				}
			})

			t.Run("a used key answers 409 whatever the types", func(t *testing.T) {
				if r := e.call(callBody(e.id, "/typed", 1), "k-typed"); r.Status != 200 {
					t.Fatalf("first: %d %s", r.Status, r.Body)
				}
				for _, body := range []string{`{"tool":%d}`, `{"tool":%d,"action":5}`, `{"tool":"%d","action":"post"}`,
					`{"tool":[%d],"action":"post"}`, `{"tool":%d,"action":"post","arguments":7}`} {
					r := e.srv.Do("POST", callPath, fmt.Sprintf(body, e.id), "Idempotency-Key", "k-typed")
					wantError(t, r, 409, "idempotency_key_reused")
				}
				if n := e.tool.count("/typed"); n != 1 {
					t.Fatalf("tool ran %d times", n)
				}
			})
		})
	}
}
