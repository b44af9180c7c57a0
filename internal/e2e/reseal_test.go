package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestResealAtStart: what an older build stored in a tool's plain
// configuration and this build seals (a URL with a key in its path, and a
// discovered OAuth provider's resource holding one) is sealed when a replica
// starts, and the tools work as before: the key still reaches the server,
// and the authorization link still names the resource.
func TestResealAtStart(t *testing.T) {
	const key = "Zk3q9v0aTr51xW8yQeSECRET"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/s/"+key+"/v1/ping" {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"pong":true}`)
	}))
	t.Cleanup(api.Close)
	a := testserver.Start(t, testserver.Options{Postgres: true})

	// An http-request tool whose base_url holds the key, configured.
	baseURL := api.URL + "/s/" + key + "/v1"
	r := a.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
	httpTool := fdInt(t, fdObject(t, r)["id"])
	for _, answer := range []map[string]any{{"base_url": baseURL}, {"auth_type": "none"}} {
		if r := a.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", httpTool), map[string]any{"user_response": answer}); r.Status != 200 {
			t.Fatalf("provide-config %v: %d %s", answer, r.Status, r.Body)
		}
	}
	// A custom-mcp tool on such a URL, at the OAuth step a discovery found.
	serverURL := "https://mcp.example.com/api/mcp/s/" + key + "/mcp"
	r = a.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp"})
	oauthTool := fdInt(t, fdObject(t, r)["id"])

	// Both rows as an older build stored them.
	db, err := sql.Open("pgx", a.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	older := func(id int64, state string, step int, config map[string]any) {
		b, _ := json.Marshal(config)
		if _, err := db.Exec("UPDATE tools SET config = $1, secrets = '', state = $2, step_index = $3 WHERE id = $4", string(b), state, step, id); err != nil {
			t.Fatal(err)
		}
	}
	older(httpTool, "configured", 2, map[string]any{"base_url": baseURL, "auth_type": "none"})
	older(oauthTool, "awaiting_authorization", 1, map[string]any{"url": serverURL, "_oauth": map[string]any{
		"issuer": "https://as.example.com", "authorization_endpoint": "https://as.example.com/authorize",
		"token_endpoint": "https://as.example.com/token", "resource": serverURL, "client_id": "quiver-client",
		"token_endpoint_auth_method": "none"}})

	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL})
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range []int64{httpTool, oauthTool} {
		for {
			config, secrets := storedTool(t, a.DatabaseURL, id)
			if !strings.Contains(config, key) && secrets != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tool %d still stored plain: %s", id, config)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	call := b.Do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": httpTool, "action": "get", "arguments": map[string]any{"path": "/ping"}})
	if call.Status != 200 || call.JSON()["is_error"] != false {
		t.Fatalf("call after resealing: %d %s", call.Status, call.Body)
	}
	view := b.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", httpTool), nil)
	if got := fdObject(t, view)["config"].(map[string]any)["base_url"]; got != api.URL+"/s/****/v1" {
		t.Errorf("base_url shown as %v", got)
	}
	step := b.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", oauthTool), nil).JSON()["next_configuration_step"].(map[string]any)
	link, _ := url.Parse(fmt.Sprint(step["authorization_url"]))
	if link == nil || link.Query().Get("resource") != serverURL {
		t.Errorf("authorization_url %v: want the resource %s", step["authorization_url"], serverURL)
	}
	fdNoSecret(t, key, call.Body, view.Body, []byte(b.LogText()))
}
