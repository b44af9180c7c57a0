package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

func TestCallResults(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		name := map[bool]string{false: "stateful", true: "stateless"}[stateless]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{Stateless: stateless})
			counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: stateless})
			c := setup(t, nil)
			mt, ct := toolFor(mail, 1, nil), toolFor(counter, 2, nil)

			tests := []struct {
				name, action, args string
				tool               *connectors.Tool
				isError            bool
				mcpContent         bool // Content is the tool's MCP content array
				check              func(t *testing.T, content json.RawMessage)
			}{
				{name: "json in text is parsed", tool: mt, action: "get_upcoming_travel", args: `{}`,
					check: func(t *testing.T, content json.RawMessage) {
						var v struct{ Trips []map[string]any }
						if err := json.Unmarshal(content, &v); err != nil || len(v.Trips) != 1 || v.Trips[0]["to"] != "JFK" {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "ask answers", tool: mt, action: "ask", args: `{"question":"When is my next flight?"}`,
					check: func(t *testing.T, content json.RawMessage) {
						var v struct {
							Answer  string
							Sources int
						}
						if json.Unmarshal(content, &v) != nil || v.Answer == "" || v.Sources != 2 {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "draft created", tool: mt, action: "create_draft", args: `{"to":"a@example.com","body":"hi"}`,
					check: func(t *testing.T, content json.RawMessage) {
						if !strings.Contains(string(content), `"draft_id":"d_`) {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "approval_required is an error with its payload", tool: mt, action: "send_draft",
					args: `{"draft_id":"d_1"}`, isError: true,
					check: func(t *testing.T, content json.RawMessage) {
						var v map[string]string
						if json.Unmarshal(content, &v) != nil || v["error"] != "approval_required" ||
							v["message"] == "" || !strings.HasPrefix(v["approval_id"], "ap_") {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "get_excerpt needs approval", tool: mt, action: "get_excerpt", args: `{"message_id":"m1"}`, isError: true},
				{name: "isError", tool: ct, action: "fail", args: ``, isError: true, mcpContent: true,
					check: func(t *testing.T, content json.RawMessage) {
						if !strings.Contains(string(content), `"type":"text"`) || !strings.Contains(string(content), "failed on purpose") {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "plain text comes as the content array", tool: ct, action: "plain", args: `null`, mcpContent: true,
					check: func(t *testing.T, content json.RawMessage) {
						var v []map[string]any
						if json.Unmarshal(content, &v) != nil || len(v) != 2 || v[0]["text"] != "hello" {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "structured content is preferred over prose", tool: ct, action: "structured", args: `{}`,
					check: func(t *testing.T, content json.RawMessage) {
						if string(content) != `{"celsius":21}` {
							t.Errorf("content = %s", content)
						}
					}},
				{name: "arguments reach the tool", tool: ct, action: "echo", args: `{"n":12345678901234567890,"s":"é"}`,
					check: func(t *testing.T, content json.RawMessage) {
						if !strings.Contains(string(content), `"s":"é"`) {
							t.Errorf("content = %s", content)
						}
					}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					res := mustCall(t, c, tc.tool, tc.action, tc.args)
					if res.IsError != tc.isError {
						t.Errorf("IsError = %v, want %v (content %s)", res.IsError, tc.isError, res.Content)
					}
					if res.MCPContent != tc.mcpContent {
						t.Errorf("MCPContent = %v, want %v (content %s)", res.MCPContent, tc.mcpContent, res.Content)
					}
					if !json.Valid(res.Content) {
						t.Fatalf("content is not JSON: %s", res.Content)
					}
					if tc.check != nil {
						tc.check(t, res.Content)
					}
				})
			}
		})
	}
}

func TestCallRejected(t *testing.T) {
	t.Parallel()
	mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{})
	c := setup(t, nil)
	tool := toolFor(mail, 1, nil)

	_, err := call(t, c, tool, "no_such_tool", `{}`)
	wantKind(t, err, connectors.KindRejected)
	if !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("error does not carry the server's message: %v", err)
	}

	_, err = call(t, c, tool, "order_status", `{}`)
	wantKind(t, err, connectors.KindRejected)
	if !strings.Contains(err.Error(), "merchant") {
		t.Errorf("error does not carry the server's message: %v", err)
	}
	if n := mail.Calls("order_status"); n != 0 {
		t.Errorf("order_status ran %d times", n)
	}

	_, err = call(t, c, tool, "ask", `["not","an","object"]`)
	wantKind(t, err, connectors.KindRejected)

	// The session survives protocol errors.
	mustCall(t, c, tool, "order_status", `{"merchant":"Acme"}`)
	if n := mail.Initializes(); n != 1 {
		t.Errorf("initializes = %d, want 1", n)
	}
}

func TestCallDropAfterActIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		srv, c, tool := counterSetup(t, mcptest.Options{Stateless: stateless}, nil)
		mustCall(t, c, tool, "read_count", `{}`) // warm: the drop happens on a live session

		_, err := call(t, c, tool, "drop_after_act", `{}`)
		wantKind(t, err, connectors.KindOutcomeUnknown)
		if n := srv.Calls("drop_after_act"); n != 1 {
			t.Errorf("stateless=%v: drop_after_act ran %d times, want exactly 1 (never re-sent)", stateless, n)
		}
		// The connector still works afterwards.
		mustCall(t, c, tool, "read_count", `{}`)
	}
}

// TestCallDropAfterActWithAnIdempotencyHeader: an Idempotency-Key among the
// configured headers makes net/http take every POST for safe to send again
// when a kept-alive connection breaks before the answer; on the SDK's path
// (net/http's transport) drop_after_act then ran twice.
func TestCallDropAfterActWithAnIdempotencyHeader(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := setup(t, &Options{AllowPrivate: true, SDKCalls: true})
	tool := toolFor(srv, 1, map[string]string{"headers": `{"Idempotency-Key":"constant"}`})
	mustCall(t, c, tool, "read_count", `{}`)
	_, err := call(t, c, tool, "drop_after_act", `{}`)
	wantKind(t, err, connectors.KindOutcomeUnknown)
	if n := srv.Calls("drop_after_act"); n != 1 {
		t.Errorf("drop_after_act ran %d times, want 1", n)
	}
}

func TestCallSlowToolTimesOutAsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{SlowDelay: 5 * time.Second}, nil)
	mustCall(t, c, tool, "read_count", `{}`)

	start := time.Now()
	_, err := c.Call(ctxFor(t, 200*time.Millisecond), tool, "slow", json.RawMessage(`{}`))
	wantKind(t, err, connectors.KindOutcomeUnknown)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Call took %v after a 200ms deadline", d)
	}
	// The session is still good for the next call.
	mustCall(t, c, tool, "read_count", `{}`)
	if n := srv.Initializes(); n != 1 {
		t.Errorf("initializes = %d, want 1", n)
	}
}

func TestCallStoppedServerIsUnreachable(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{}, nil)
	mustCall(t, c, tool, "read_count", `{}`) // a pooled session exists
	srv.Close()

	// A request racing the server's close on a kept-alive connection may
	// have been written before the close was seen: that one is honestly
	// unknown. Once the close is seen, calls are unreachable.
	if !eventually(t, 2*time.Second, func() bool {
		_, err := call(t, c, tool, "read_count", `{}`)
		return connectors.KindOf(err) == connectors.KindUnreachable
	}) {
		t.Fatal("calls to a stopped server never became unreachable")
	}
	_, err := call(t, c, tool, "increment", `{}`)
	wantKind(t, err, connectors.KindUnreachable)

	// A fresh tool, never connected.
	_, err = call(t, c, toolFor(srv, 2, nil), "increment", `{}`)
	wantKind(t, err, connectors.KindUnreachable)
}

func TestCallEgressGuard(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := setup(t, &Options{AllowPrivate: false})
	_, err := call(t, c, toolFor(srv, 1, nil), "increment", `{}`)
	wantKind(t, err, connectors.KindUnreachable)
	if !strings.Contains(err.Error(), "private or reserved address") {
		t.Errorf("error = %v", err)
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("server got %d requests", n)
	}
}

func TestCallUpstreamAuth(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
	c := setup(t, nil)

	_, err := call(t, c, toolFor(srv, 1, map[string]string{"bearer_token": "wrong"}), "list_businesses", `{}`)
	wantKind(t, err, connectors.KindUpstreamAuth)
	if !strings.Contains(err.Error(), "doesn't check out") {
		t.Errorf("error does not carry the server's message: %v", err)
	}

	res := mustCall(t, c, toolFor(srv, 2, map[string]string{"bearer_token": mcptest.InboxKey}), "send_reply",
		`{"business":"park-studio","threadId":"t_81","body":"Thanks!"}`)
	var v map[string]string
	if json.Unmarshal(res.Content, &v) != nil || v["status"] != "queued" || !strings.HasPrefix(v["sendId"], "s_") || v["sendsAt"] == "" {
		t.Errorf("send_reply = %s", res.Content)
	}

	// X-Api-Key through the headers field; the OAuth access token as bearer.
	mustCall(t, c, toolFor(srv, 3, map[string]string{"headers": `{"x-api-key":"` + mcptest.InboxKey + `"}`}), "list_businesses", `{}`)
	oauth := toolFor(srv, 4, nil)
	oauth.AccessToken = mcptest.InboxKey
	mustCall(t, c, oauth, "list_businesses", `{}`)
	if n := srv.Calls("list_businesses"); n != 2 {
		t.Errorf("list_businesses ran %d times, want 2", n)
	}
}

func TestCallResultTooLarge(t *testing.T) {
	t.Parallel()
	_, c, tool := counterSetup(t, mcptest.Options{}, &Options{AllowPrivate: true, MaxResponseBytes: 64 << 10})
	res := mustCall(t, c, tool, "big", `{"bytes":200000}`)
	if !res.IsError || !strings.Contains(string(res.Content), "result_too_large") {
		t.Errorf("result = %v %s", res.IsError, res.Content)
	}
	res = mustCall(t, c, tool, "big", `{"bytes":1000}`)
	if res.IsError {
		t.Errorf("small result is an error: %s", res.Content)
	}
}

func TestErrorsHideTheURLQuery(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := setup(t, nil)
	tool := toolFor(srv, 1, map[string]string{"url": srv.URL + "?api_key=s3cret"})
	mustCall(t, c, tool, "read_count", `{}`)
	srv.Close()
	if !eventually(t, 2*time.Second, func() bool {
		_, err := call(t, c, tool, "read_count", `{}`)
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("error shows the key: %v", err)
		}
		return connectors.KindOf(err) == connectors.KindUnreachable
	}) {
		t.Fatal("never unreachable")
	}
}

// A result holding a content item of a kind the SDK does not know is passed
// on as the server sent it: the server answered. Before, such a call was an
// unknown outcome, its key burned, as if nothing had come back.
func TestCallPassesOnUnfamiliarContent(t *testing.T) {
	t.Parallel()
	tool := rawServer(t, `{"tools":[{"name":"film","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`,
		map[string]string{"film": `{"content":[{"type":"video","uri":"https://example.com/v.mp4"},{"type":"text","text":"a clip"}]}`})
	c := setup(t, nil)
	res := mustCall(t, c, tool, "film", `{}`)
	if res.IsError || !strings.Contains(string(res.Content), `"type":"video"`) || !strings.Contains(string(res.Content), `"a clip"`) {
		t.Fatalf("result %+v: %s", res, res.Content)
	}
}

// TestErrorPayloads: a result reports an error when its "error" member says
// there was one, with or without a "message" (API.md: an {"error": …}
// payload); before, only a string error beside a string message did.
func TestErrorPayloads(t *testing.T) {
	for content, want := range map[string]bool{
		`{"error":"approval_required","message":"Ask first."}`: true,
		`{"error":"x"}`: true,
		`{"error":{"code":404,"message":"not found"}}`: true,
		`{"error":"not_found","message":null}`:         true,
		`{"error":true}`:                               true,
		`{"error":null,"data":[1]}`:                    false,
		`{"error":false}`:                              false,
		`{"error":""}`:                                 false,
		`{"error":{}}`:                                 false,
		`{"error":0}`:                                  false,
		`{"errors":["a"]}`:                             false,
		`{"Error":"x"}`:                                false,
		`{"\u0065rror":"x"}`:                           true,
		`{"count":1}`:                                  false,
		`{"ERROR":"x","error":null}`:                   false,
		`["error"]`:                                    false,
		`"error"`:                                      false,
	} {
		if got := isErrorPayload(json.RawMessage(content)); got != want {
			t.Errorf("%s: %v, want %v", content, got, want)
		}
	}
}
