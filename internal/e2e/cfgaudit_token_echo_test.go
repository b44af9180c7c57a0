package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestHTTPRequestTokenEchoMasked: Secrets are never returned. A server that
// quotes back the http-request tool's token (an echo endpoint such as
// httpbin's /headers, or a 401 naming it) does not hand it to whoever calls
// the tool, a read-only key included: the token is masked in the result's
// body, text or JSON, and headers, whatever the status, and in its replay.
func TestHTTPRequestTokenEchoMasked(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		w.Header().Set("X-Echo", got)
		switch {
		case strings.HasSuffix(r.URL.Path, "/text"):
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "you sent "+got)
		case strings.HasSuffix(r.URL.Path, "/refused"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": "bad credentials: " + got})
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"headers": map[string]string{"Authorization": got}, "n": json.Number("12345678901234567890")})
		}
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name, token string
		auth        map[string]any
	}{
		{"bearer", "tok-Echo-7f3a9", map[string]any{"auth_type": "bearer"}},
		{"header", `k<&>"\q-2`, map[string]any{"auth_type": "header", "header_name": "X-Api-Key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := c.createTool("http-request")
			provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
			c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": srv.URL}})
			tc.auth["token"] = tc.token
			c.ok(200, "POST", provide, map[string]any{"user_response": tc.auth})
			forms := []string{tc.token}
			if enc, _ := json.Marshal(tc.token); string(enc[1:len(enc)-1]) != tc.token {
				forms = append(forms, string(enc[1:len(enc)-1]))
			}
			for _, path := range []string{"/json", "/text", "/refused"} {
				call := map[string]any{"tool": id, "action": "get", "arguments": map[string]any{"path": path}}
				r := c.do("POST", "/api/v1/agents/custom-tools/call/", call, "Idempotency-Key", tc.name+path)
				if r.Status != 200 {
					t.Fatalf("get %s: %d %s", path, r.Status, r.Body)
				}
				replay := c.do("POST", "/api/v1/agents/custom-tools/call/", call, "Idempotency-Key", tc.name+path)
				for _, f := range forms {
					fdNoSecret(t, f, r.Body, replay.Body)
				}
				var res struct {
					IsError bool `json:"is_error"`
					Result  struct {
						Status  int               `json:"status"`
						Headers map[string]string `json:"headers"`
						Body    json.RawMessage   `json:"body"`
					} `json:"result"`
				}
				if err := json.Unmarshal(r.Body, &res); err != nil {
					t.Fatalf("get %s: %v in %s", path, err, r.Body)
				}
				if !strings.Contains(res.Result.Headers["X-Echo"], "****") || !strings.Contains(string(res.Result.Body), "****") {
					t.Errorf("get %s: the echoed token is not shown masked: %s", path, r.Body)
				}
				if res.IsError != (path == "/refused") {
					t.Errorf("get %s: is_error %v", path, res.IsError)
				}
				if path == "/json" && !strings.Contains(string(res.Result.Body), "12345678901234567890") {
					t.Errorf("get /json: the rest of the JSON body changed: %s", res.Result.Body)
				}
			}
		})
	}
}
