package calls

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// TestConnectorProblemUpstreamLimited: a tool's provider refusing for its
// own limits is 429 rate_limited, never invalid_arguments, with the
// provider's delay bounded to 1..3600 seconds, and no Retry-After when the
// provider gave none (a used-up plan: retrying soon will not help).
func TestConnectorProblemUpstreamLimited(t *testing.T) {
	t.Parallel()
	cases := []struct {
		retryAfter time.Duration
		want       int
	}{
		{0, 0},
		{time.Millisecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{30 * time.Second, 30},
		{time.Hour, 3600},
		{24 * time.Hour, 3600},
		{-time.Second, 0},
	}
	for _, tc := range cases {
		ce := connectors.Errorf(connectors.KindUpstreamLimited, nil, "Tavily rate limited the request (429): slow down")
		ce.RetryAfter = tc.retryAfter
		p, ok := problem.As(connectorProblem(ce))
		if !ok {
			t.Fatalf("%s: not a problem: %v", tc.retryAfter, connectorProblem(ce))
		}
		if p.Code != problem.RateLimited || p.HTTPStatus() != 429 || p.RetryAfter != tc.want || p.Fields != nil {
			t.Errorf("%s: %s %d retry_after=%d fields=%v", tc.retryAfter, p.Code, p.HTTPStatus(), p.RetryAfter, p.Fields)
		}
		if !strings.Contains(p.Message, "provider") || !strings.Contains(p.Message, "not Quiver's") ||
			!strings.Contains(p.Message, "slow down") {
			t.Errorf("%s: message %q", tc.retryAfter, p.Message)
		}
	}
}

// TestConnectorProblemKinds pins the mapping of every other pre-effect kind.
func TestConnectorProblemKinds(t *testing.T) {
	t.Parallel()
	for kind, want := range map[connectors.Kind]problem.Code{
		connectors.KindUnreachable:   problem.ToolUnreachable,
		connectors.KindUpstreamAuth:  problem.UpstreamAuthFailed,
		connectors.KindUnknownAction: problem.NotFound,
		connectors.KindRejected:      problem.InvalidArguments,
	} {
		p, ok := problem.As(connectorProblem(connectors.Errorf(kind, nil, "no")))
		if !ok || p.Code != want || p.RetryAfter != 0 {
			t.Errorf("%s: %+v", kind, p)
		}
	}
}

// TestEncodeResultAnswer: the Answer encodeResult returns is what decoding
// the body it wrote gives, for every form a result takes there (the agent
// endpoint uses one in place of the other); none when the body cannot be
// decoded (nested too deeply), as on a replay.
func TestEncodeResultAnswer(t *testing.T) {
	t.Parallel()
	cases := []connectors.Result{
		{Content: json.RawMessage(`{"count":3}`)},
		{Content: json.RawMessage(" \n{\"a\": [1, 2]}\r\n\t"), IsError: true},
		{Content: json.RawMessage(`"text"`)},
		{Content: json.RawMessage(`[{"type":"text","text":"hi"}]`), MCPContent: true},
		{Content: json.RawMessage(`not json`), MCPContent: true},
		{},
		{Content: json.RawMessage(`null`)},
		{Content: json.RawMessage(`8`), Structured: json.RawMessage(`{"result":8}`)},
		{Content: json.RawMessage(`8`), Structured: json.RawMessage(`{"result":8}`), IsError: true},
		{Content: json.RawMessage(`"` + strings.Repeat("x", MaxResult) + `"`), MCPContent: true},
		{Content: json.RawMessage(strings.Repeat("[", 9999) + strings.Repeat("]", 9999))},
		{Content: json.RawMessage(strings.Repeat(`{"a":`, 5000) + strings.Repeat("[", 5000) + "1" + strings.Repeat("]", 5000) + strings.Repeat("}", 5000))},
	}
	for _, r := range cases {
		body, answer := encodeResult("call_1", 7, "read", r, time.Millisecond)
		var decoded Answer
		err := json.Unmarshal(body, &decoded)
		if answer == nil {
			if err == nil {
				t.Errorf("%.40q: no answer, though the body decodes", r.Content)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%.40q: the body does not decode: %v", r.Content, err)
		}
		if !reflect.DeepEqual(*answer, decoded) {
			t.Errorf("%.40q: answer %+v, the body decodes to %+v", r.Content, *answer, decoded)
		}
	}
}

// TestEncodeResultStructured: a tool's structured content other than its
// result is the body's structured_content, after result; an error result,
// structured content that is not JSON, and a result and structured content
// over MaxResult together (the result too large) have none.
func TestEncodeResultStructured(t *testing.T) {
	t.Parallel()
	body, _ := encodeResult("call_1", 7, "count", connectors.Result{Content: json.RawMessage(`8`),
		Structured: json.RawMessage(`{"result":8}`)}, time.Millisecond)
	if !strings.Contains(string(body), `"result":8,"structured_content":{"result":8},"duration_ms":`) {
		t.Errorf("body %s, want structured_content after result", body)
	}
	for _, r := range []connectors.Result{
		{Content: json.RawMessage(`8`), Structured: json.RawMessage(`{"result":8}`), IsError: true},
		{Content: json.RawMessage(`8`), Structured: json.RawMessage(`{"result":`)},
		{Content: json.RawMessage(`"` + strings.Repeat("x", MaxResult/2) + `"`), Structured: json.RawMessage(`"` + strings.Repeat("x", MaxResult/2) + `"`)},
	} {
		body, _ := encodeResult("call_1", 7, "count", r, time.Millisecond)
		if strings.Contains(string(body), "structured_content") {
			t.Errorf("%.40s: body %.200s, want no structured_content", r.Content, body)
		}
	}
	if body, _ := encodeResult("call_1", 7, "count", connectors.Result{Content: json.RawMessage(`"` + strings.Repeat("x", MaxResult/2) + `"`),
		Structured: json.RawMessage(`"` + strings.Repeat("x", MaxResult/2) + `"`)}, time.Millisecond); !strings.Contains(string(body), "result_too_large") {
		t.Errorf("body %.200s, want result_too_large", body)
	}
}
