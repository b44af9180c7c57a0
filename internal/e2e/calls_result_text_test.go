package e2e

// A call's answer is JSON text, which is UTF-8 (RFC 8259 §8.1), whatever
// bytes the tool answered: Go's json.Valid lets bytes that are not UTF-8
// through inside strings, and a client's decoder (Python's json.loads on
// the body, say) refuses the whole answer for them.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestResultIsUTF8: a JSON answer holding bytes that are not UTF-8 (a
// Latin-1 "é", a lone continuation byte) comes back, and replays byte for
// byte, as valid UTF-8 with U+FFFD in their place, as a decoder reads
// them; the rest of the answer keeps its exact text.
func TestResultIsUTF8(t *testing.T) {
	for mode, opts := range map[string]testserver.Options{"postgres": {Postgres: true}, "embedded": {}} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, opts)
			tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, "{\"name\":\"caf\xe9\",\"odd\":\"a\x80b\",\"n\":12345678901234567890}")
			}))
			t.Cleanup(tool.Close)
			id := connectHTTPTool(t, srv.URL, srv.Key, tool.URL)
			body := callBody(id, "/latin1", map[string]any{})

			first := srv.Do("POST", callPath, body, "Idempotency-Key", "k-latin1")
			replay := srv.Do("POST", callPath, body, "Idempotency-Key", "k-latin1")
			for name, r := range map[string]*testserver.Response{"first": first, "replay": replay} {
				if r.Status != 200 {
					t.Fatalf("%s: %d %s", name, r.Status, r.Body)
				}
				if !utf8.Valid(r.Body) {
					t.Fatalf("%s: the answer is not UTF-8: %q", name, r.Body)
				}
				var got struct {
					Result struct {
						Body struct {
							Name string `json:"name"`
							Odd  string `json:"odd"`
						} `json:"body"`
					} `json:"result"`
				}
				if err := json.Unmarshal(r.Body, &got); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got.Result.Body.Name != "caf\uFFFD" || got.Result.Body.Odd != "a\uFFFDb" {
					t.Errorf("%s: name %q, odd %q", name, got.Result.Body.Name, got.Result.Body.Odd)
				}
				if !bytes.Contains(r.Body, []byte(`"n":12345678901234567890`)) {
					t.Errorf("%s: the number lost its text: %s", name, r.Body)
				}
			}
			if !bytes.Equal(first.Body, replay.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay differs:\n%q\n%q", first.Body, replay.Body)
			}
		})
	}
}
