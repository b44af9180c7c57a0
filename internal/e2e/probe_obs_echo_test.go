package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsServerEchoHidden: an MCP server that quotes the credentials it
// was sent in its refusal (a 401 naming the bearer token, a 500 naming the
// request line and headers) has its words shown in Quiver's answer with
// those credentials masked: the configuration's own secrets (bearer token,
// header values, the URL's key) are never in an answer, over REST, the
// agent's MCP endpoint, or provide-config. Before, the server's text was
// quoted as it came.
func TestProbeObsServerEchoHidden(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := startObsUpstream(t)
	url := up.URL + "/mcp?token=" + obsQuery
	good := map[string]any{"url": url, "bearer_token": obsBearer, "headers": map[string]any{"X-Api-Key": obsHeader}}
	id := mqConnect(t, srv, "obs", good)
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	var answers [][]byte
	up.mode.Store("401")
	rest := mqCall(srv, id, "lookup", nil, "")
	mqWant(t, rest, 502, "upstream_auth_failed")
	if !strings.Contains(string(rest.Body), "bad credentials: Bearer ****") {
		t.Errorf("the server's words are not shown, masked: %s", rest.Body)
	}
	answers = append(answers, rest.Body)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "obs__lookup", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	answers = append(answers, b)
	_, r := mqConfigure(t, srv, "obs-401", good)
	answers = append(answers, r.Body)
	wrong := map[string]any{"url": url, "bearer_token": obsBearer + "-old", "headers": map[string]any{"X-Api-Key": obsHeader}}
	up.mode.Store("")
	_, r = mqConfigure(t, srv, "obs-wrong", wrong)
	answers = append(answers, r.Body)
	up.mode.Store("echo500")
	_, r = mqConfigure(t, srv, "obs-500", good)
	if r.Status != 422 || !strings.Contains(string(r.Body), "auth=Bearer ****") {
		t.Errorf("configure against a 500: %d %s, want 422 quoting the server, masked", r.Status, r.Body)
	}
	answers = append(answers, r.Body)
	for _, a := range answers {
		for _, s := range []string{obsBearer, obsHeader, obsQuery} {
			if strings.Contains(string(a), s) {
				t.Errorf("an answer shows %s: %s", s, a)
			}
		}
	}
}
