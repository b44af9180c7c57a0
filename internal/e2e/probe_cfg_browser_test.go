package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCfgBrowserRefusalNamesURL: fetch_page's refusals of its url (not
// http(s), a private address, a redirect to a non-http URL) are 422
// invalid_arguments whose fields name url, the argument at fault, as
// schema errors and http-request's refusals (fields.path) do. Before,
// fields named "arguments".
func TestProbeCfgBrowserRefusalNamesURL(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	}))
	t.Cleanup(hs.Close)
	open := fdStart(t, testserver.Options{})
	guarded := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	for _, tc := range []struct {
		c   *fdClient
		url string
	}{
		{open, "ftp://example.com/x"},
		{open, "example.com"},
		{open, hs.URL + "/go"},
		{guarded, "http://127.0.0.1:1/"},
		{guarded, "http://169.254.169.254/latest/meta-data/"},
	} {
		id := tc.c.createTool("browser")
		r := tc.c.do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{
			"tool": id, "action": "fetch_page", "arguments": map[string]any{"url": tc.url}})
		fdWantFields(t, r, "invalid_arguments", "url")
	}
}
