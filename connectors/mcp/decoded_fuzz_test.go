package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
)

// decodedSeeds are results whose reading by the fast path (decoded) once
// differed from the SDK client's, or could: keys the SDK matches exactly
// (encoding/json would take "ISERROR", "Content" or "iſError"), duplicate
// keys, nulls, and a duplicate content array decoded over the first one's
// items, which the SDK's decoder reuses.
var decodedSeeds = []string{
	`{"content":[{"type":"text","text":"{\"ok\":true}"}]}`,
	`{"content":[{"type":"text","text":"{\"ok\":true}"}],"ISERROR":true}`,
	`{"content":[{"type":"text","text":"{\"ok\":true}"}],"IsError":true}`,
	`{"content":[{"type":"text","text":"{\"ok\":true}"}],"isError":true,"iſError":false}`,
	`{"Content":[{"type":"text","text":"1"}]}`,
	`{"content":[],"Content":[{"type":"text","text":"1"}]}`,
	`{"content":[{"type":"text","text":"1","TEXT":"2"}]}`,
	`{"content":[{"type":"text","text":"1","Type":"image"}]}`,
	`{"content":[{"type":"text","text":"1"}],"content":[{"type":"text"}]}`,
	`{"content":[{"type":"text","text":"1"}],"content":[{"type":"text","text":null}]}`,
	`{"content":[{"type":"text","text":"1"},{"type":"text","text":"2"}],"content":[{"type":"text","text":"3"}]}`,
	`{"content":[{"type":"text","text":null}]}`,
	`{"content":[{"type":"text","text":"1"}],"isError":null}`,
	`{"content":[{"type":"text","text":"1"}],"is\u0045rror":true}`,
	`{"content":[{"type":"text","text":"1"}],"structuredContent":{"a":1},"structuredContent":null}`,
	`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1},"structuredContent":{"a":2}}`,
	`{"content":[{"type":"text","text":"{\"a\":1}"}],"StructuredContent":{"a":2}}`,
	`{"content":[{"type":"text","text":"{\"b\":1,\"a\":2}"}],"structuredContent":{"b":1,"a":2}}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"structuredContent":{"n":9007199254740993}}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":[1,"a",null]}`,
	`{"content":[{"type":"text","text":"x"}],"isError":true,"structuredContent":{"error":"e"}}`,
	`{"content":[],"isError":true,"structuredContent":{"error":"e"}}`,
	`{"content":[{"type":"text","text":"{\"error\":\"e\",\"message\":\"m\"}"}]}`,
	`{"content":[{"type":"text","text":"1"}],"_meta":{"k":1},"x":[{}]}`,
	`{"content":null}`,
	`{}`,
	`null`,
}

// FuzzDecodedAsSDK: a tools/call result the SDK's client reads (its
// CallToolResult, decoded as the client's Await decodes it) maps, read by
// the fast path (decoded), to what result makes of the SDK's reading: the
// same isError, content and structured content. FuzzFastCallAnswerAsSDK
// covers the answer around the result. Left out, deliberately:
//   - a result the SDK refuses (a content item of a kind it does not know, a
//     number past float64, nesting past its depth limit): call.go reads it on
//     its own (unfamiliar), where the SDK's client would fail the call;
//   - structured content as the server wrote it: the fast path keeps the
//     server's JSON, the SDK reads it into an any (float64s round numbers
//     past 2^53, maps sort keys), so structured content, and content that
//     is structured content, is compared as encoding/json reads it, and
//     structured content the fast path leaves out for being content's own
//     JSON counts as content's (sameMapped).
func FuzzDecodedAsSDK(f *testing.F) {
	for _, s := range decodedSeeds {
		f.Add([]byte(s))
	}
	c := &Connector{opts: Options{MaxResponseBytes: 1 << 30}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 16<<10 || !json.Valid(raw) {
			return // an answer's result is JSON: the envelope was read
		}
		var res mcp.CallToolResult
		if json.Unmarshal(raw, &res) != nil {
			return // the SDK refuses it (see above)
		}
		theirs, terr := c.result(&res, nil)
		ours, oerr := c.decoded(raw)
		if (terr == nil) != (oerr == nil) {
			t.Fatalf("%s: error %v here, %v through the SDK", raw, oerr, terr)
		}
		if why := sameMapped(ours, theirs); why != "" {
			t.Fatalf("%s: %s\nfast path: %+v\nSDK:       %+v", raw, why, show(ours), show(theirs))
		}
	})
}

// sameMapped says how ours and theirs differ, or "" if they do not (see
// FuzzDecodedAsSDK).
func sameMapped(ours, theirs connectors.Result) string {
	switch {
	case ours.IsError != theirs.IsError:
		return "isError differs"
	case ours.MCPContent != theirs.MCPContent:
		return "one is a content array, the other not"
	case !sameJSON(ours.Content, theirs.Content):
		return "content differs"
	case !sameJSON(structuredOf(ours), structuredOf(theirs)):
		return "structured content differs"
	}
	return ""
}

// structuredOf is r's structured content: its own, or its content when it
// carries none beside it.
func structuredOf(r connectors.Result) json.RawMessage {
	if r.Structured != nil {
		return r.Structured
	}
	return r.Content
}

// sameJSON reports whether a and b are the same bytes or, read by
// encoding/json into an any, the same value.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// show is r with its JSON as text, for a failure's message.
func show(r connectors.Result) struct {
	IsError, MCPContent bool
	Content, Structured string
} {
	return struct {
		IsError, MCPContent bool
		Content, Structured string
	}{r.IsError, r.MCPContent, string(r.Content), string(r.Structured)}
}

// TestDecodedKeysAsSDK pins the SDK's reading of a result's keys, which
// the fast path follows: exact names only, and the last of a repeated key;
// and so does a result the SDK refuses, which call.go reads on its own.
func TestDecodedKeysAsSDK(t *testing.T) {
	c := &Connector{opts: Options{MaxResponseBytes: 1 << 20}}
	for _, tc := range []struct {
		raw, content string
		isError      bool
	}{
		{`{"content":[{"type":"text","text":"{\"ok\":true}"}],"ISERROR":true}`, `{"ok":true}`, false},
		{`{"content":[{"type":"text","text":"{\"ok\":true}"}],"isError":true,"iſError":false}`, `{"ok":true}`, true},
		{`{"Content":[{"type":"text","text":"1"}]}`, `[]`, false},
		{`{"content":[{"type":"text","text":"1","TEXT":"2"}]}`, `1`, false},
		{`{"content":[{"type":"text","text":"1"}],"content":[{"type":"text"}]}`, `1`, false},
		// A content item of a kind the SDK does not know: read on its own
		// (unfamiliar), by the same names.
		{`{"content":[{"type":"future","x":1}],"ISERROR":true}`, `[{"type":"future","x":1}]`, false},
	} {
		got, err := c.decoded(json.RawMessage(tc.raw))
		if err != nil || string(got.Content) != tc.content || got.IsError != tc.isError {
			t.Errorf("%s: %+v, %v; want content %s, isError %v", tc.raw, show(got), err, tc.content, tc.isError)
		}
	}
}

// TestDecodedTooDeep: a result nested deeper than the SDK allows is one it
// could not read, here too, and reading it does not overflow the stack
// (segmentio's decoder recurses without a limit).
func TestDecodedTooDeep(t *testing.T) {
	c := &Connector{opts: Options{MaxResponseBytes: 1 << 30}}
	deep := strings.Repeat("[", 4<<20) + strings.Repeat("]", 4<<20)
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"{}"}],"x":` + deep + `}`,
		`{"content":[{"type":"future"}],"structuredContent":` + deep + `}`,
		`{"content":[{"type":"text","text":"{}"}],"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	} {
		_, err := c.decoded(json.RawMessage(raw))
		var cerr *connectors.Error
		if !errors.As(err, &cerr) || cerr.Kind != connectors.KindOutcomeUnknown {
			t.Errorf("%.60s…: %v; want an unknown outcome", raw, err)
		}
	}
	// As deep as the SDK allows is read.
	raw := `{"content":[{"type":"text","text":"{}"}],"x":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`
	if got, err := c.decoded(json.RawMessage(raw)); err != nil || string(got.Content) != "{}" {
		t.Errorf("999 deep: %+v, %v; want {}", show(got), err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Errorf("the SDK refuses 999 deep: %v", err)
	}
}
