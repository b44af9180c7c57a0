package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
)

// TestTypedResults (typedResult): an action with an output schema is listed
// with it, and its calls answer, on the fast path and the SDK's alike, with
// the tool's structured content (structured_content, else the result) and
// an error with none, Quiver's refusals included. A successful answer with
// no object to carry (JSON that is not one, plain text) is an error whose
// content, after a line that says so, is the tool's: MCP's structured
// content is an object, and a client that checks the schema would refuse
// it whole. An action without one keeps its result as structured content
// when it is an object, errors included, as before.
func TestTypedResults(t *testing.T) {
	f, _, fastURL, sdkURL := pair(t)
	f.mu.Lock()
	f.actions = append(f.actions, connectors.Action{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`),
		Retryable: true, OutputSchema: json.RawMessage(`{"type":"object","properties":{"result":{"type":"integer"}}}`)})
	f.mu.Unlock()

	tools := listNames(t, connect(t, fastURL))
	if s, _ := json.Marshal(tools["My_Mail__count"].OutputSchema); string(s) != `{"properties":{"result":{"type":"integer"}},"type":"object"}` {
		t.Errorf("count is listed with output schema %s", s)
	}
	if tools["My_Mail__read"].OutputSchema != nil {
		t.Errorf("read is listed with output schema %v", tools["My_Mail__read"].OutputSchema)
	}

	body := func(b string) func(calls.Request) (*calls.Response, error) {
		return func(calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Body: []byte(b)}, nil
		}
	}
	cases := []struct {
		name, action string
		answer       func(calls.Request) (*calls.Response, error)
		structured   string // "" for none
		note         bool   // the content opens with noStructuredContent
	}{
		{"wrapped", "count", body(`{"call_id":"c_1","is_error":false,"result":8,"structured_content":{"result":8}}`), `{"result":8}`, false},
		{"same", "count", body(`{"call_id":"c_1","is_error":false,"result":{"result":8}}`), `{"result":8}`, false},
		{"not an object", "count", body(`{"call_id":"c_1","is_error":false,"result":8}`), "", true},
		{"null", "count", body(`{"call_id":"c_1","is_error":false,"result":null}`), "", true},
		{"plain text", "count", body(`{"call_id":"c_1","is_error":false,"result_type":"mcp_content","result":[{"type":"text","text":"eight"}]}`), "", true},
		{"structured content not an object", "count", body(`{"call_id":"c_1","is_error":false,"result":"8","structured_content":8}`), "", true},
		{"untyped structured content not an object", "read", body(`{"call_id":"c_1","is_error":false,"result":"8","structured_content":8}`), "", false},
		{"tool error", "count", body(`{"call_id":"c_1","is_error":true,"result":{"error":"boom"}}`), "", false},
		{"refused", "count", func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad"}
		}, "", false},
		{"untyped tool error", "read", body(`{"call_id":"c_1","is_error":true,"result":{"error":"boom"}}`), `{"error":"boom"}`, false},
		{"untyped refused", "read", func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad"}
		}, `{"error":"invalid_arguments","message":"bad"}`, false},
		{"untyped with structured content", "read", body(`{"call_id":"c_1","is_error":false,"result":8,"structured_content":{"result":8}}`), `{"result":8}`, false},
	}
	for _, tc := range cases {
		f.mu.Lock()
		f.answer = tc.answer
		f.mu.Unlock()
		msg := toolsCall("My_Mail__"+tc.action, `{}`)
		fast, sdk := post(t, f, fastURL, nil, msg), post(t, f, sdkURL, nil, msg)
		if fast.body != sdk.body {
			t.Errorf("%s: fast path %s\nSDK %s", tc.name, fast.body, sdk.body)
		}
		var got struct {
			Result struct {
				Structured json.RawMessage `json:"structuredContent"`
				Content    []struct{ Text string }
			}
		}
		want := 1
		if tc.note {
			want = 2
		}
		if err := json.Unmarshal([]byte(fast.body), &got); err != nil || len(got.Result.Content) != want || got.Result.Content[want-1].Text == "" {
			t.Fatalf("%s: %s", tc.name, fast.body)
		}
		if tc.note && (got.Result.Content[0].Text != noStructuredContent || !strings.Contains(fast.body, `"isError":true`)) {
			t.Errorf("%s: %s, want an error whose content opens with noStructuredContent", tc.name, fast.body)
		}
		if string(got.Result.Structured) != tc.structured {
			t.Errorf("%s: structuredContent %s, want %q", tc.name, got.Result.Structured, tc.structured)
		}
		if tc.action == "count" && tc.structured == "" && !strings.Contains(fast.body, `"isError":true`) {
			t.Errorf("%s: %s, want an error", tc.name, fast.body)
		}
	}
}

// TestListedSchemasAreMCPShaped (mcpShape): a tool's schemas that MCP's
// Tool type would not take are listed mended, or without the output schema,
// so that a client that checks the listing (the TypeScript SDK's) takes
// it; the rest of the list is unchanged.
func TestListedSchemasAreMCPShaped(t *testing.T) {
	f, _, fastURL, _ := pair(t)
	action := func(name, in, out string) connectors.Action {
		a := connectors.Action{Name: name, InputSchema: json.RawMessage(in), Retryable: true}
		if out != "" {
			a.OutputSchema = json.RawMessage(out)
		}
		return a
	}
	f.mu.Lock()
	f.actions = append(f.actions,
		action("bad_props", `{"type":"object","properties":[1],"required":"x"}`, ""),
		action("bool_props", `{"type":"object","properties":{"a":true,"b":false,"c":3,"d":null},"required":["a",1,null]}`, ""),
		action("array_out", `{"type":"object"}`, `{"type":"array","items":{"type":"integer"}}`),
		action("untyped_out", `{"type":"object"}`, `{"properties":{"n":{"type":"integer"}}}`),
		action("bad_out", `{"type":"object"}`, `{"type":"object","properties":{"n":false},"required":"n"}`),
		// A type list that admits objects (JSON Schema allows one) is MCP's
		// "object": arguments and structured content are objects.
		action("type_list", `{"type":["object","null"],"properties":{"a":{"type":"string"}}}`, `{"type":["null","object"]}`),
		action("type_list_one", `{"type":["object"]}`, `{"type":["string"]}`),
	)
	f.mu.Unlock()
	tools := listNames(t, connect(t, fastURL))
	for name, want := range map[string][2]string{
		"bad_props":     {`{"type":"object"}`, "null"},
		"bool_props":    {`{"properties":{"a":{},"b":{"not":{}},"c":{},"d":{}},"required":["a"],"type":"object"}`, "null"},
		"array_out":     {`{"type":"object"}`, "null"},
		"untyped_out":   {`{"type":"object"}`, `{"properties":{"n":{"type":"integer"}},"type":"object"}`},
		"bad_out":       {`{"type":"object"}`, `{"properties":{"n":{"not":{}}},"type":"object"}`},
		"type_list":     {`{"properties":{"a":{"type":"string"}},"type":"object"}`, `{"type":"object"}`},
		"type_list_one": {`{"type":"object"}`, "null"},
	} {
		tool := tools["My_Mail__"+name]
		if tool == nil {
			t.Errorf("%s is not listed", name)
			continue
		}
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		if string(in) != want[0] || string(out) != want[1] {
			t.Errorf("%s: listed with input schema %s and output schema %s, want %s and %s", name, in, out, want[0], want[1])
		}
	}
	if tools["My_Mail__read"] == nil {
		t.Errorf("the other actions are not listed: %v", tools)
	}
}
