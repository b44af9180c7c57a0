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

// TestMCPKeyInURL: many hosted MCP servers take their key in the URL: in
// its query (https://mcp.example.com/mcp?apiKey=…), as a segment of its path
// (…/api/mcp/s/<token>/mcp). (User information is refused: bearer_token and
// headers say it.) Such a URL works
// like any other, but no answer or log line shows the key (connectors.
// ShownURL masks it, keeping the rest) and it is stored sealed with the
// secrets, not in the plain configuration.
func TestMCPKeyInURL(t *testing.T) {
	const key = "k3y0123456789abcdefSECRET"
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mcp.NewServer(&mcp.Implementation{Name: "keyed", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("apiKey") == key:
			sdk.ServeHTTP(w, r)
		case r.URL.Path == "/api/mcp/s/"+key+"/mcp":
			r.URL.Path = "/mcp"
			sdk.ServeHTTP(w, r)
		default:
			http.Error(w, `{"error":"unauthorized","message":"the key is missing or wrong"}`, http.StatusUnauthorized)
		}
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})

	for _, tc := range []struct{ name, url, shown string }{
		{"query", hs.URL + "/mcp?apiKey=" + key + "&region=eu", hs.URL + "/mcp?apiKey=****&region=****"},
		{"path", hs.URL + "/api/mcp/s/" + key + "/mcp", hs.URL + "/api/mcp/s/****/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, provided := mqConfigure(t, srv, "keyed", map[string]any{"url": tc.url})
			if provided.Status != 200 || provided.JSON()["is_configured"] != true {
				t.Fatalf("configure: %d %s", provided.Status, provided.Body)
			}
			if got := fdObject(t, provided)["config"].(map[string]any)["url"]; got != tc.shown {
				t.Errorf("config.url after provide-config = %v, want %s", got, tc.shown)
			}
			view := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
			if got := fdObject(t, view)["config"].(map[string]any)["url"]; got != tc.shown {
				t.Errorf("config.url = %v, want %s", got, tc.shown)
			}
			list := srv.Do("GET", "/api/v1/agents/custom-tools/", nil)
			r := mqCall(srv, id, "lookup", nil, "")
			if r.Status != 200 || r.JSON()["is_error"] != false {
				t.Fatalf("call: %d %s, want the key still sent from its sealed storage", r.Status, r.Body)
			}
			// The same URL with the key one character short: refused, and
			// the refusal does not show what was sent either.
			wrong := strings.Replace(tc.url, key, key[:len(key)-1], 1)
			_, refused := mqConfigure(t, srv, "keyed-wrong", map[string]any{"url": wrong})
			if refused.Status != 422 {
				t.Errorf("configure with a wrong key: %d %s, want 422", refused.Status, refused.Body)
			}
			fdNoSecret(t, key[:len(key)-1], provided.Body, view.Body, list.Body, r.Body, refused.Body, []byte(srv.LogText()))

			config, secrets := storedTool(t, srv.DatabaseURL, id)
			if strings.Contains(config, key) || strings.Contains(secrets, key) || strings.Contains(config, `"url"`) {
				t.Errorf("stored config %s / secrets %.40s…: the URL with its key is not sealed", config, secrets)
			}
			if secrets == "" {
				t.Error("no sealed secrets stored")
			}
		})
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
