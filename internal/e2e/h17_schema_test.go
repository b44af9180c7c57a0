package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// h17Echo is an MCP server whose one tool, "echo" (read-only), has the
// input schema it is given, and answers every call with the arguments it
// received, byte for byte, as its text content.
type h17Echo struct {
	schemas map[string]string // tool name → input schema JSON
	mu      sync.Mutex
	last    string
}

func (s *h17Echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Arguments       json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(b, &m)
	w.Header().Set("Content-Type", "application/json")
	switch m.Method {
	case "initialize":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}`,
			m.ID, m.Params.ProtocolVersion)
	case "tools/list":
		var tools []string
		for name, sc := range s.schemas {
			tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":%s,"annotations":{"readOnlyHint":true}}`, name, sc))
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s]}}`, m.ID, strings.Join(tools, ","))
	case "tools/call":
		s.mu.Lock()
		s.last = string(m.Params.Arguments)
		s.mu.Unlock()
		text, _ := json.Marshal(string(m.Params.Arguments))
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, m.ID, text)
	case "":
		w.WriteHeader(http.StatusAccepted)
	default:
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID)
	}
}

// TestH17SchemaArguments calls an MCP tool whose input schemas use odd
// JSON Schema features ($ref into $defs, if/then, patternProperties,
// boolean schemas, enums of mixed types, type lists, huge and exponent
// numbers). Every answer matches the OpenAPI document; accepted arguments
// reach the tool byte for byte (12345678901234567890 is not rounded through
// float64, 1.0 and 1e2 keep their text); refused ones are 422
// invalid_arguments naming a field, and the tool is not called.
func TestH17SchemaArguments(t *testing.T) {
	echo := &h17Echo{schemas: map[string]string{
		"big":     `{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number","multipleOf":0.5}}}`,
		"ref":     `{"type":"object","$defs":{"p":{"type":"string","minLength":2}},"properties":{"a":{"$ref":"#/$defs/p"}},"required":["a"]}`,
		"cond":    `{"type":"object","if":{"properties":{"k":{"const":"a"}},"required":["k"]},"then":{"required":["v"]},"patternProperties":{"^z":{"type":"boolean"}}}`,
		"uni":     `{"type":"object","properties":{"s":{"type":"string","maxLength":1,"pattern":"^\\p{L}$"}}}`,
		"enum":    `{"type":"object","properties":{"e":{"enum":[1,"1",null,{"a":[1]}]}}}`,
		"types":   `{"type":"object","properties":{"a":{"not":{"type":"null"}},"b":{"type":["integer","string"]}}}`,
		"boolsch": `{"type":"object","properties":{"t":true,"f":false}}`,
		"cents":   `{"type":"object","properties":{"amount":{"type":"number","multipleOf":0.01}}}`,
	}}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	spec := fdLoadSpec(t)
	id := c.createTool("custom-mcp")
	c.ok(200, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id), map[string]any{"user_response": map[string]any{"url": hs.URL}})
	acts := c.do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", id), nil)
	h17Check(t, spec, "GET", "/api/v1/agents/custom-tools/{id}/actions/", "actions", acts)
	for _, tc := range []struct {
		action, args string
		ok           bool
	}{
		{"big", `{"n":12345678901234567890}`, true}, {"big", `{"n":9007199254740993}`, true}, {"big", `{"n":1.0}`, true},
		{"big", `{"n":1e2}`, true}, {"big", `{"n":-0}`, true}, {"big", `{"x":1.5}`, true},
		{"big", `{"n":1e400}`, false}, {"big", `{"n":1.5}`, false}, {"big", `{"x":0.7}`, false},
		{"ref", `{"a":"xy"}`, true}, {"ref", `{"a":"x"}`, false}, {"ref", `{"a":"😀"}`, false}, {"ref", `{}`, false},
		{"cond", `{"k":"a","v":1}`, true}, {"cond", `{"k":"b"}`, true}, {"cond", `{"zz":true}`, true},
		{"cond", `{"k":"a"}`, false}, {"cond", `{"zz":1}`, false},
		{"uni", `{"s":"é"}`, true}, {"uni", `{"s":"😀"}`, false}, {"uni", `{"s":"e\u0301"}`, false},
		{"enum", `{"e":1}`, true}, {"enum", `{"e":1.0}`, true}, {"enum", `{"e":"1"}`, true}, {"enum", `{"e":null}`, true},
		{"enum", `{"e":{"a":[1.0]}}`, true}, {"enum", `{"e":2}`, false}, {"enum", `{"e":"01"}`, false},
		{"types", `{"b":"x"}`, true}, {"types", `{"b":7}`, true}, {"types", `{"a":null}`, false}, {"types", `{"b":1.5}`, false},
		{"boolsch", `{"t":{"any":[1]}}`, true}, {"boolsch", `{"f":1}`, false},
		// Exact multiples of 0.01 that floating-point division takes for
		// remainders (1.15 / 0.01 = 114.99999999999999).
		{"cents", `{"amount":1.15}`, true}, {"cents", `{"amount":0.07}`, true}, {"cents", `{"amount":1.155}`, false},
		{"big", `[]`, false}, {"big", `"x"`, false}, {"big", `1`, false},
	} {
		body := fmt.Sprintf(`{"tool":%d,"action":%q,"arguments":%s}`, id, tc.action, tc.args)
		r := c.do("POST", "/api/v1/agents/custom-tools/call/", body)
		h17Check(t, spec, "POST", "/api/v1/agents/custom-tools/call/", body, r)
		echo.mu.Lock()
		got := echo.last
		echo.last = ""
		echo.mu.Unlock()
		switch {
		case tc.ok && (r.Status != 200 || got != tc.args):
			t.Errorf("%s %s: %d %s; the tool got %q, want the arguments as sent", tc.action, tc.args, r.Status, fdClip(r.Body), got)
		case !tc.ok:
			fdFields(t, fdWantError(t, r, 422, "invalid_arguments"))
			if got != "" {
				t.Errorf("%s %s refused, yet the tool was called with %s", tc.action, tc.args, got)
			}
		}
	}
}
