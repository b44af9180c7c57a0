package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestSecretCopiedWithASpace: a credential pasted with a space before or
// after it is refused on its field, and the tool stays as it was. Tavily
// checks nothing at configuration, so such a key was stored and failed
// only at the first call, as upstream_auth_failed.
func TestSecretCopiedWithASpace(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	tool := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", int64(r.JSON()["id"].(float64)))
	before := srv.Do("GET", tool, nil).Body
	for _, key := range []string{"tvly-abc ", " tvly-abc"} {
		r := srv.Do("POST", tool+"provide-config/", map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": key}})
		fields, _ := r.JSON()["fields"].(map[string]any)
		if msg, _ := fields["TAVILY_API_KEY"].(string); r.Status != 422 || !strings.Contains(msg, "space") {
			t.Fatalf("key %q: %d %s, want 422 on TAVILY_API_KEY naming the space", key, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), "tvly-abc") {
			t.Fatalf("the refusal shows the key: %s", r.Body)
		}
		if now := srv.Do("GET", tool, nil).Body; !bytes.Equal(now, before) {
			t.Fatalf("a refused key changed the tool:\n%s\n%s", before, now)
		}
	}
	if r := srv.Do("POST", tool+"provide-config/", map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-abc"}}); r.Status != 200 {
		t.Fatalf("the key without the space: %d %s", r.Status, r.Body)
	}
}
