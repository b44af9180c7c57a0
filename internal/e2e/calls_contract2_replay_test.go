package e2e

import (
	"bytes"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReplayHeadersAndInFlightAccounts: a replay carries the stored
// Content-Type, Idempotent-Replayed and a fresh X-Request-Id, and nothing
// else of the first answer's headers; and a key held by one account's call
// in flight is free for another account.
func TestReplayHeadersAndInFlightAccounts(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setupCalls(t, opts)

			t.Run("replay headers", func(t *testing.T) {
				body := callBody(e.id, "/hdr", 1)
				first := e.call(body, "k-hdr")
				ids := map[string]bool{first.Header.Get("X-Request-Id"): true}
				for i := 0; i < 3; i++ {
					again := e.call(body, "k-hdr")
					if again.Status != 200 || !bytes.Equal(again.Body, first.Body) {
						t.Fatalf("replay %d: %d %s", i, again.Status, again.Body)
					}
					if again.Header.Get("Content-Type") != "application/json; charset=utf-8" || again.Header.Get("Idempotent-Replayed") != "true" {
						t.Fatalf("replay %d headers: %v", i, again.Header)
					}
					id := again.Header.Get("X-Request-Id")
					if id == "" || ids[id] {
						t.Fatalf("replay %d X-Request-Id %q not fresh", i, id)
					}
					ids[id] = true
					if got, want := replayHeaderNames(again.Header, "Idempotent-Replayed"), replayHeaderNames(first.Header); !slices.Equal(got, want) {
						t.Fatalf("replay %d headers %v, first %v", i, got, want)
					}
				}
			})

			t.Run("a key in flight in one account is free in another", func(t *testing.T) {
				other := e.srv.NewKey("c2-inflight-" + mode)
				otherID := connectHTTPTool(t, e.srv.URL, other, e.tool.URL)
				done := make(chan *testserver.Response, 1)
				go func() { done <- e.call(callBody(e.id, "/slow?ms=600", 1), "k-inflight") }()
				testserver.Eventually(t, 3*time.Second, "the slow call to reach the tool", func() bool {
					return e.tool.count("/slow") == 1
				})
				r := testserver.Do(t, e.srv.URL, other, "POST", callPath, callBody(otherID, "/inflight", 1), "Idempotency-Key", "k-inflight")
				if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("other account during the call: %d %s", r.Status, r.Body)
				}
				if k := testserver.Do(t, e.srv.URL, other, "GET", "/api/v1/idempotency-keys/k-inflight", nil); k.JSON()["state"] != "succeeded" {
					t.Fatalf("other account's key: %d %s", k.Status, k.Body)
				}
				if first := <-done; first.Status != 200 {
					t.Fatalf("first account's call: %d %s", first.Status, first.Body)
				}
			})
		})
	}
}

// replayHeaderNames are h's header names bar Date, X-Request-Id and drop,
// sorted.
func replayHeaderNames(h http.Header, drop ...string) []string {
	var ns []string
	for n := range h {
		if n == "Date" || n == "X-Request-Id" {
			continue
		}
		skip := false
		for _, d := range drop {
			skip = skip || http.CanonicalHeaderKey(d) == n
		}
		if !skip {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return ns
}
