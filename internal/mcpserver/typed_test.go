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
// the tool's structured content (structured_content, else the result, an
// object or not) and an error with none, Quiver's refusals included. An
// action without one keeps its result as structured content when it is an
// object, errors included, as before.
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
	}{
		{"wrapped", "count", body(`{"call_id":"c_1","is_error":false,"result":8,"structured_content":{"result":8}}`), `{"result":8}`},
		{"same", "count", body(`{"call_id":"c_1","is_error":false,"result":{"result":8}}`), `{"result":8}`},
		{"not an object", "count", body(`{"call_id":"c_1","is_error":false,"result":8}`), `8`},
		{"tool error", "count", body(`{"call_id":"c_1","is_error":true,"result":{"error":"boom"}}`), ""},
		{"refused", "count", func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad"}
		}, ""},
		{"untyped tool error", "read", body(`{"call_id":"c_1","is_error":true,"result":{"error":"boom"}}`), `{"error":"boom"}`},
		{"untyped refused", "read", func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad"}
		}, `{"error":"invalid_arguments","message":"bad"}`},
		{"untyped with structured content", "read", body(`{"call_id":"c_1","is_error":false,"result":8,"structured_content":{"result":8}}`), `{"result":8}`},
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
		if err := json.Unmarshal([]byte(fast.body), &got); err != nil || len(got.Result.Content) != 1 || got.Result.Content[0].Text == "" {
			t.Fatalf("%s: %s", tc.name, fast.body)
		}
		if string(got.Result.Structured) != tc.structured {
			t.Errorf("%s: structuredContent %s, want %q", tc.name, got.Result.Structured, tc.structured)
		}
		if tc.action == "count" && tc.structured == "" && !strings.Contains(fast.body, `"isError":true`) {
			t.Errorf("%s: %s, want an error", tc.name, fast.body)
		}
	}
}
