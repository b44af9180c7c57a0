package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quiverhq/quiver/connectors"
)

// rawServer answers initialize, tools/list with list, and each tools/call
// with the result calls holds for its tool name.
func rawServer(t *testing.T, list string, calls map[string]string) *connectors.Tool {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		result := `{}`
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/list":
			result = list
		case "tools/call":
			result = calls[m.Params.Name]
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}))
	t.Cleanup(srv.Close)
	return &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": srv.URL}, Version: 1}
}

// TestStructuredContent: an upstream tool's outputSchema is its action's
// OutputSchema (a schema that is not an object is none), and a result
// whose one JSON text is other JSON than its structuredContent keeps the
// structured content beside it, on the fast path and the SDK's alike. The
// same JSON twice (the text is the structured content serialized), a
// result whose content is its structured content, and an error keep none.
// An error whose text is not JSON is its content array, whatever
// structured content came with it; one without content is that.
func TestStructuredContent(t *testing.T) {
	t.Parallel()
	list := `{"tools":[
		{"name":"wrapped","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"result":{"type":"integer"}}}},
		{"name":"same","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},
		{"name":"odd","inputSchema":{"type":"object"},"outputSchema":true},
		{"name":"plain","inputSchema":{"type":"object"}}]}`
	calls := map[string]string{
		"wrapped": `{"content":[{"type":"text","text":"8"}],"structuredContent":{"result":8}}`,
		"same":    `{"content":[{"type":"text","text":"{\"a\": 1}"}],"structuredContent":{"a":1}}`,
		"prose":   `{"content":[{"type":"text","text":"It is 21 degrees."}],"structuredContent":{"celsius":21}}`,
		"failed":  `{"content":[{"type":"text","text":"8"}],"structuredContent":{"result":8},"isError":true}`,
		"payload": `{"content":[{"type":"text","text":"{\"error\":\"no_data\"}"}],"structuredContent":{"result":8}}`,
		"refused": `{"content":[{"type":"text","text":"mailbox full"}],"structuredContent":{"id":0},"isError":true}`,
		"bare":    `{"content":[],"structuredContent":{"error":"x"},"isError":true}`,
	}
	want := map[string]struct {
		content, structured string
		isError             bool
	}{
		"wrapped": {content: `8`, structured: `{"result":8}`},
		"same":    {content: `{"a": 1}`},
		"prose":   {content: `{"celsius":21}`},
		"failed":  {content: `8`, isError: true},
		"payload": {content: `{"error":"no_data"}`, isError: true},
		"refused": {content: `[{"type":"text","text":"mailbox full"}]`, isError: true},
		"bare":    {content: `{"error":"x"}`, isError: true},
	}
	for _, path := range []string{"fast", "sdk"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			tool := rawServer(t, list, calls)
			c := setup(t, nil)
			actions, err := c.Actions(ctxFor(t, 10e9), tool)
			if err != nil {
				t.Fatal(err)
			}
			got := actionsByName(t, actions)
			if s := string(got["wrapped"].OutputSchema); s != `{"properties":{"result":{"type":"integer"}},"type":"object"}` {
				t.Errorf("wrapped's OutputSchema %s", s)
			}
			if got["odd"].OutputSchema != nil || got["plain"].OutputSchema != nil {
				t.Errorf("odd's OutputSchema %s, plain's %s; want none", got["odd"].OutputSchema, got["plain"].OutputSchema)
			}
			if path == "sdk" {
				sdkOnly(c)
			}
			for name, w := range want {
				res := mustCall(t, c, tool, name, `{}`)
				if string(res.Content) != w.content || string(res.Structured) != w.structured || res.IsError != w.isError {
					t.Errorf("%s: content %s, structured %s, error %v; want %s, %q, %v",
						name, res.Content, res.Structured, res.IsError, w.content, w.structured, w.isError)
				}
			}
		})
	}
}
