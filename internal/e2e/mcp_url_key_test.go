package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read a tool's row as stored
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPKeyInURL: many hosted MCP servers take their key in the URL's
// query (https://mcp.example.com/mcp?apiKey=…). Such a URL works like any
// other, but no answer shows the key (the query's values are masked, its
// keys kept) and it is stored sealed with the secrets, not in the plain
// configuration.
func TestMCPKeyInURL(t *testing.T) {
	const key = "k3y-in-the-query-0123456789"
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mcp.NewServer(&mcp.Implementation{Name: "keyed", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("apiKey") != key {
			http.Error(w, `{"error":"unauthorized","message":"apiKey is missing or wrong"}`, http.StatusUnauthorized)
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})

	id, provided := mqConfigure(t, srv, "keyed", map[string]any{"url": hs.URL + "/mcp?apiKey=" + key + "&region=eu"})
	if provided.Status != 200 || provided.JSON()["is_configured"] != true {
		t.Fatalf("configure: %d %s", provided.Status, provided.Body)
	}
	want := hs.URL + "/mcp?apiKey=****&region=****"
	if got := fdObject(t, provided)["config"].(map[string]any)["url"]; got != want {
		t.Errorf("config.url after provide-config = %v, want %s", got, want)
	}
	view := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
	if got := fdObject(t, view)["config"].(map[string]any)["url"]; got != want {
		t.Errorf("config.url = %v, want %s", got, want)
	}
	list := srv.Do("GET", "/api/v1/agents/custom-tools/", nil)
	r := mqCall(srv, id, "lookup", nil, "")
	if r.Status != 200 || r.JSON()["is_error"] != false {
		t.Fatalf("call: %d %s, want the key still sent from its sealed storage", r.Status, r.Body)
	}
	fdNoSecret(t, key, provided.Body, view.Body, list.Body, r.Body, []byte(srv.LogText()))

	config, secrets := storedTool(t, srv.DatabaseURL, id)
	if strings.Contains(config, key) || strings.Contains(secrets, key) || strings.Contains(config, "apiKey") {
		t.Errorf("stored config %s / secrets %.40s…: the URL with its key is not sealed", config, secrets)
	}
	if secrets == "" {
		t.Error("no sealed secrets stored")
	}
}

// storedTool reads a tool's row as stored: its plain configuration and its
// sealed secrets, straight from the database at dbURL.
func storedTool(t *testing.T, dbURL string, id int64) (config, secrets string) {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT config, secrets FROM tools WHERE id = $1", id).Scan(&config, &secrets); err != nil {
		t.Fatal(err)
	}
	return config, secrets
}
