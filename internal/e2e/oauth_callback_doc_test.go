package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthCallbackQueryIsDocumented: every query parameter the callback
// acts on is a parameter of its operation in the served OpenAPI document.
// The callback reads iss (RFC 9207): a wrong one is refused as
// issuer_mismatch, a missing one from a server that always sends it as
// issuer_missing. Before, the document declared only code, state and
// error, though its 400 answer named both outcomes, so a client built from
// it could not send iss.
func TestOAuthCallbackQueryIsDocumented(t *testing.T) {
	p, counter := oaDiscoveredServer(t, true)
	p.issSupported.Store(true)
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	q := oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
	q.Set("iss", "https://attacker.example")
	if status, body := oaCallback(t, srv, q); status != 400 || !strings.Contains(body, `data-outcome="issuer_mismatch"`) {
		t.Fatalf("callback with another iss: %d %s, want 400 issuer_mismatch", status, body)
	}

	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET /openapi.json: %v", err)
	}
	raw, ok := doc.Paths["/api/v1/oauth/callback"]["get"]
	if !ok {
		t.Fatal("the document has no GET /api/v1/oauth/callback")
	}
	var op struct {
		Parameters []struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &op); err != nil {
		t.Fatalf("GET /api/v1/oauth/callback: %v", err)
	}
	declared := map[string]bool{}
	for _, prm := range op.Parameters {
		if prm.In == "query" {
			declared[prm.Name] = true
		}
	}
	for _, name := range []string{"code", "state", "error", "iss"} {
		if !declared[name] {
			t.Errorf("GET /api/v1/oauth/callback reads the query parameter %q, which its operation does not declare", name)
		}
	}
}
