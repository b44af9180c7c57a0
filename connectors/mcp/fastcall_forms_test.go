package mcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// handTool starts srv and returns a tool (ID 1) pointing at it.
func handTool(t *testing.T, srv *mcptest.HandWritten) *connectors.Tool {
	t.Helper()
	mcptest.StartHandWritten(t, srv)
	return &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": srv.URL}, Version: 1}
}

// TestFastCallReadsTheAnswerAsTheSDKDoes: answers the SDK's client reads
// as the tool's result, read the same on the fast path. Before, each was an
// unknown outcome (or, for structured content, a number rounded) although
// the tool had run.
func TestFastCallReadsTheAnswerAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	const text = `{\"ok\":true}`
	jsonAnswer := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
	}
	// asDouble writes id back as a server that keeps IDs as doubles may.
	asDouble := func(format string) func(string) (string, string) {
		return func(id string) (string, string) {
			n, _ := strconv.ParseInt(id, 10, 64)
			return "application/json", jsonAnswer(strconv.FormatFloat(float64(n), format[0], -1, 64) + format[1:])
		}
	}
	for name, c := range map[string]struct {
		answer func(id string) (string, string)
		want   string
	}{
		"ID with a decimal point": {func(id string) (string, string) { return "application/json", jsonAnswer(id + ".0") }, `{"ok":true}`},
		"ID in exponent form":     {asDouble("E"), `{"ok":true}`},
		"ID with an exponent":     {func(id string) (string, string) { return "application/json", jsonAnswer(id + "e0") }, `{"ok":true}`},
		"data after the answer":   {func(id string) (string, string) { return "application/json", jsonAnswer(id) + " xyz" }, `{"ok":true}`},
		"last event without a blank line": {func(id string) (string, string) {
			return "text/event-stream", "data: " + jsonAnswer(id) + "\n"
		}, `{"ok":true}`},
		"last event without a line end": {func(id string) (string, string) {
			return "text/event-stream", "event: message\ndata: " + jsonAnswer(id)
		}, `{"ok":true}`},
		"event name with trailing space": {func(id string) (string, string) {
			return "text/event-stream", "event: message \t\ndata: " + jsonAnswer(id) + "\n\n"
		}, `{"ok":true}`},
		"event data followed by more data": {func(id string) (string, string) {
			return "text/event-stream", "data: " + jsonAnswer(id) + " xyz\n\n"
		}, `{"ok":true}`},
		"structured content by its exact name": {func(id string) (string, string) {
			return "application/json", `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"prose"}],` +
				`"structuredContent":{"v":"lower"},"StructuredContent":{"v":"UPPER"}}}`
		}, `{"v":"lower"}`},
		"structured content, exactly": {func(id string) (string, string) {
			return "application/json", `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"prose"}],` +
				`"structuredContent":{"z":12345678901234567890,"a":"<b>"}}}`
		}, `{"z":12345678901234567890,"a":"<b>"}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := &mcptest.HandWritten{Answer: c.answer}
			tool := handTool(t, srv)
			conn := setup(t, nil)
			res, err := conn.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
			if err != nil || res.IsError || string(res.Content) != c.want {
				t.Fatalf("result %s (error %v), %v; want %s", res.Content, res.IsError, err, c.want)
			}
			if fastSessions(conn) != 1 || srv.Calls() != 1 {
				t.Fatalf("fast sessions %d, calls %d", fastSessions(conn), srv.Calls())
			}
		})
	}
}

// TestFastCallRepliesAsTheSDKDoes: a request the server makes on a call's
// stream gets the SDK client's reply: the SDK offers roots, so roots/list
// has a result (an error there can fail a server that relies on it).
func TestFastCallRepliesAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	for method, want := range map[string]string{
		"ping":                   `"result":{}`,
		"roots/list":             `"result":{"roots":[]}`,
		"sampling/createMessage": `"error":{"code":-31001,"message":"client does not support CreateMessage"}`,
		"elicitation/create":     `"error":{"code":-32602,"message":"client does not support elicitation"}`,
		"something/else":         `"error":{"code":-32601,`,
	} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			tool := handTool(t, &mcptest.HandWritten{Ask: method})
			conn := setup(t, nil)
			// The server answers with the reply it got, which is JSON.
			got := string(mustCall(t, conn, tool, "act", `{}`).Content)
			if !strings.Contains(got, `"id":"ask-1"`) || !strings.Contains(got, want) {
				t.Fatalf("the client replied %s; want %s", got, want)
			}
		})
	}
}

func TestSameID(t *testing.T) {
	const id = 1<<40 + 1
	for raw, want := range map[string]bool{
		"1099511627777": true, " 1099511627777 ": true, "1099511627777.0": true, "1.099511627777E+12": true,
		"1099511627777e0": true, "1099511627778": false, "1099511627777.5": false, `"1099511627777"`: false,
		"null": false, "": false, "1e400": false, "-1099511627777": false,
	} {
		if got := sameID(json.RawMessage(raw), id); got != want {
			t.Errorf("sameID(%s) = %v, want %v", raw, got, want)
		}
	}
}
