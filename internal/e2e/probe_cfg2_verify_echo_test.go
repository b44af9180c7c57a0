package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCfg2VerifyEchoHidesSecrets: a custom MCP server that refuses
// initialize with a JSON-RPC error quoting what it was sent (the request's
// URL with its key, the Authorization header, a header's value) does not
// get those secrets into the 422 that refuses the step: API.md, secrets
// are never returned. Before, the refusal carried the server's words
// whole, token and all.
func TestProbeCfg2VerifyEchoHidesSecrets(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		msg := fmt.Sprintf("refused %s auth=%q key=%q", r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":%q}}`, msg)
	}))
	t.Cleanup(echo.Close)
	c := fdStart(t, testserver.Options{})
	id := c.createTool("custom-mcp")
	path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id)
	before := c.ok(200, "GET", path, nil)
	const secret = "sk-SEKRITSEKRIT12345"
	for _, answer := range []map[string]any{
		{"url": echo.URL + "/mcp?key=" + secret},
		{"url": echo.URL + "/mcp/" + secret},
		{"url": echo.URL + "/mcp?" + secret},
		{"url": echo.URL + "/mcp", "bearer_token": secret},
		{"url": echo.URL + "/mcp", "headers": map[string]string{"X-Api-Key": secret}},
	} {
		r := c.do("POST", path+"provide-config/", map[string]any{"user_response": answer})
		fdWantFields(t, r, "validation_error", "url")
		if strings.Contains(string(r.Body), "SEKRIT") {
			t.Fatalf("answer %v: the refusal shows the secret: %s", answer, r.Body)
		}
		if !strings.Contains(string(r.Body), "refused") {
			t.Fatalf("answer %v: the refusal lost the server's words: %s", answer, r.Body)
		}
	}
	after := c.ok(200, "GET", path, nil)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("a refused step changed the tool: %v → %v", before, after)
	}
}
