package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/jsondepth"
)

// Call runs the tool named action on the tool's MCP server (tools/call), on
// the tool's pooled session. A failure is a *connectors.Error whose Kind says
// whether the server may have run it; a request is re-sent on a fresh session
// only when the server provably did not get it.
func (c *Connector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	tgt, err := c.toolTarget(t)
	if err != nil {
		return connectors.Result{}, err
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil, "the arguments must be a JSON object")
	}
	if err := ctx.Err(); err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindUnreachable, err, "the call's time ran out before it was sent")
	}
	for try := 0; ; try++ {
		s, err := c.pool.acquire(ctx, t, tgt)
		if err != nil {
			return connectors.Result{}, err
		}
		a := &attempt{budget: new(streamBudget)}
		res, err := c.callOn(withAttempt(ctx, a), s, action, args)
		c.pool.release(s)
		st := a.snapshot()
		if err == nil {
			return tgt.hideEchoed(res), nil
		}
		var mapped *connectors.Error
		if errors.As(err, &mapped) {
			return connectors.Result{}, err // the answer came, but could not be read
		}
		if st.tooLarge || errors.Is(err, errTooLarge) {
			return tooLarge(c.opts.MaxResponseBytes), nil
		}
		if sessionGone(st) {
			c.pool.lost(ctx, s, "session gone")
			if try == 0 {
				continue
			}
		}
		if werr := toolFailure(st, err); werr != nil {
			return failure(werr), nil
		}
		if try == 0 && s.fast.Load() != nil && st.err != nil && egress.IsConnectFailure(st.err) && !egress.IsBlocked(st.err) {
			// The fast path could not connect where the session's own
			// transport did (a server that speaks only HTTP/2, say). Nothing
			// was sent: this call, and the session's next, go through the SDK.
			s.fast.Store(nil)
			c.opts.Logger.DebugContext(ctx, "mcp fast path off for a session", "tool_id", t.ID, "error", redact(st.err, tgt))
			continue
		}
		return connectors.Result{}, c.failed(ctx, s, st, err, tgt)
	}
}

// failed classifies a request on s that failed for good. A server that
// refused the credentials retires s: the next user connects afresh.
func (c *Connector) failed(ctx context.Context, s *slot, st attemptState, err error, tgt *target) *connectors.Error {
	cerr := classify(st, err, tgt)
	if cerr.Kind == connectors.KindUpstreamAuth {
		c.pool.retire(ctx, s, "credentials refused")
	}
	return cerr
}

// callOn calls action on s's session: by the fast path when the session
// has one, else through the SDK. An error that is a *connectors.Error came
// from mapping the answer; any other is for classify.
func (c *Connector) callOn(ctx context.Context, s *slot, action string, args json.RawMessage) (connectors.Result, error) {
	fast := s.fast.Load()
	if fast == nil {
		res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: action, Arguments: args})
		if err != nil {
			return connectors.Result{}, err
		}
		return c.result(res, nil)
	}
	raw, err := fast.call(ctx, action, args)
	if err != nil {
		return connectors.Result{}, err
	}
	return c.decoded(raw)
}

// decoded maps raw, the result of a tools/call answer the fast path read,
// as result maps the SDK's reading of it.
func (c *Connector) decoded(raw json.RawMessage) (connectors.Result, error) {
	// The common answer, one text block holding JSON, is read here; any
	// other goes through the SDK's own CallToolResult, so it maps exactly
	// as on the SDK's path. The fields are read as the SDK reads them (see
	// sdkDecode), into the same types: the content items are pointers
	// because a repeated "content" is decoded over the first one's items.
	var common struct {
		Content []*struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool            `json:"isError"`
		Structured json.RawMessage `json:"structuredContent"`
	}
	if sdkDecode(raw, &common) == nil && len(common.Content) == 1 && common.Content[0] != nil &&
		common.Content[0].Type == "text" && jsonText(common.Content[0].Text) {
		out := connectors.Result{IsError: common.IsError,
			Content: json.RawMessage(bytes.TrimSpace([]byte(common.Content[0].Text)))}
		// Most tools' text is their structured content serialized, byte
		// for byte (the Go SDK's typed tools): no second decode then. The
		// server's own JSON of it is kept, where the SDK's any would round
		// numbers past 2^53 and sort keys.
		if !tooDeep(common.Structured) {
			out.Structured = otherJSON(out.Content, common.Structured)
		}
		return c.checked(out)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return c.unfamiliar(raw, err)
	}
	return c.result(&res, structuredContent(raw))
}

// sdkDecode decodes data into v as the Go SDK's client decodes a result:
// with segmentio's decoder, object keys matched to fields exactly
// (encoding/json would also take "ISERROR" for isError, or "ſ" for "s"),
// the last of a repeated key winning, and nothing nested deeper than the
// SDK allows (segmentio's decoder recurses without a limit of its own: a
// result nested millions deep would overflow the stack).
func sdkDecode(data []byte, v any) error {
	if jsondepth.Exceeds(data, jsondepth.SDKLimit) {
		return errTooDeep
	}
	_, err := sjson.Parse(data, v, sjson.DontMatchCaseInsensitiveStructFields)
	return err
}

var errTooDeep = fmt.Errorf("json: nested deeper than %d", jsondepth.SDKLimit)

// structuredContent is the structuredContent member of a raw result, or nil.
// It is taken by its exact name, as the SDK takes it (a struct field would
// also take "StructuredContent").
func structuredContent(raw json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil
	}
	return members["structuredContent"]
}

// unfamiliar maps a result the SDK cannot decode, such as one holding a
// content item of a kind it does not know (a later protocol's): the server
// answered, so its content goes on as it came, mapped as result does. Only
// an answer that is not a result at all is an unknown outcome.
func (c *Connector) unfamiliar(raw json.RawMessage, err error) (connectors.Result, error) {
	var loose struct {
		Content []json.RawMessage `json:"content"`
		IsError bool              `json:"isError"`
	}
	if sdkDecode(raw, &loose) != nil || loose.Content == nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindOutcomeUnknown, err, "the tool's result could not be read")
	}
	out := connectors.Result{IsError: loose.IsError}
	if structuredIsResult(loose.IsError, len(loose.Content)) {
		out.Content = structuredContent(raw)
	}
	if len(out.Content) == 0 || string(out.Content) == "null" {
		out.Content, _ = json.Marshal(loose.Content) // raw messages: cannot fail
		out.MCPContent = true
	}
	return c.checked(out)
}

// result maps a tools/call result: a single text block holding JSON is that
// JSON; otherwise, for a result that is not an error, structured content if
// there is some (structured, the server's own JSON of it, when known: the
// SDK holds it as an any, whose float64s round numbers past 2^53 and whose
// maps reorder keys), else the content array. An isError result's other
// content is its content array: its text says what went wrong, and its
// structured content, if any, need not (the Go SDK's typed tools send their
// output type's zero value beside the error text); only an error without
// content is its structured content. An isError result, or a
// JSON object with string "error" and "message" fields (such as an
// approval_required payload), is an error result with its payload intact.
func (c *Connector) result(res *mcp.CallToolResult, structured json.RawMessage) (connectors.Result, error) {
	out := connectors.Result{IsError: res.IsError}
	var err error
	if res.StructuredContent != nil && len(structured) == 0 {
		structured, err = json.Marshal(res.StructuredContent)
	}
	if tooDeep(structured) {
		res.StructuredContent, structured = nil, nil
	}
	switch {
	case err != nil:
	case len(res.Content) == 1 && isJSONText(res.Content[0]):
		out.Content = json.RawMessage(bytes.TrimSpace([]byte(res.Content[0].(*mcp.TextContent).Text)))
		if res.StructuredContent != nil {
			out.Structured = otherJSON(out.Content, structured)
		}
	case res.StructuredContent != nil && structuredIsResult(res.IsError, len(res.Content)):
		out.Content = structured
	default:
		content := res.Content
		if content == nil {
			content = []mcp.Content{}
		}
		out.Content, err = json.Marshal(content)
		out.MCPContent = true
	}
	if err != nil {
		// The SDK decoded it, so this cannot happen short of a bug.
		return connectors.Result{}, connectors.Errorf(connectors.KindOutcomeUnknown, err, "the tool's result could not be encoded")
	}
	return c.checked(out)
}

// structuredIsResult reports whether a result's structured content, when
// its content is not one JSON text block, is its result: always for a
// success, and for an error only when it has no content, whose text would
// say what went wrong (the Go SDK's typed tools send their output type's
// zero value beside an error's text).
func structuredIsResult(isError bool, contentItems int) bool {
	return !isError || contentItems == 0
}

// checked applies the size limit and the error-payload rule to a mapped
// result. An error result keeps no structured content: the agent MCP
// endpoint answers errors without it, as a client may check structured
// content against the tool's output schema even on an error.
func (c *Connector) checked(out connectors.Result) (connectors.Result, error) {
	if int64(len(out.Content))+int64(len(out.Structured)) > c.opts.MaxResponseBytes {
		return tooLarge(c.opts.MaxResponseBytes), nil
	}
	if !out.IsError && isErrorPayload(out.Content) {
		out.IsError = true
	}
	if out.IsError {
		out.Structured = nil
	}
	return out, nil
}

// otherJSON is structured, compacted, when it is valid JSON other than
// content's (whitespace aside), else nil: the structured content a result
// must carry beside its content. Most tools' text is their structured
// content serialized (MCP asks for that), so most results carry none.
func otherJSON(content, structured json.RawMessage) json.RawMessage {
	if len(structured) == 0 || string(structured) == "null" || bytes.Equal(content, structured) {
		return nil
	}
	var a, b bytes.Buffer
	if json.Compact(&b, structured) != nil {
		return nil
	}
	if json.Compact(&a, content) == nil && bytes.Equal(a.Bytes(), b.Bytes()) {
		return nil
	}
	return b.Bytes()
}

// tooDeep reports whether structured content nests deeper than clients
// read (jsondepth.ResultLimit): it is then left out, and the result is the
// content beside it.
func tooDeep(structured json.RawMessage) bool {
	return jsondepth.Exceeds(structured, jsondepth.ResultLimit)
}

func isJSONText(content mcp.Content) bool {
	t, ok := content.(*mcp.TextContent)
	return ok && jsonText(t.Text)
}

// jsonText reports whether a text block is JSON to pass on parsed: valid,
// and nested no deeper than clients read (jsondepth.ResultLimit). Deeper
// text stays the content it came as.
func jsonText(text string) bool {
	b := []byte(text)
	return json.Valid(b) && !jsondepth.Exceeds(b, jsondepth.ResultLimit)
}

// isErrorPayload reports whether content is a JSON object whose "error"
// member says there was one (API.md: "an {"error": …} payload"): a
// non-empty string, a non-empty object or true. A null, false, empty or
// numeric "error" is taken for a field of a result, not a report.
func isErrorPayload(content json.RawMessage) bool {
	if len(content) == 0 || content[0] != '{' {
		return false
	}
	// Most results hold no such member, and JSON can spell the key only as
	// "error" or with \u escapes: without either there is nothing to decode.
	if !bytes.Contains(content, []byte("error")) && !bytes.Contains(content, []byte(`\u`)) {
		return false
	}
	// A map, not a struct: a struct field would also take "Error" or
	// "ERROR", which a result may well hold for other reasons.
	var p map[string]json.RawMessage
	if json.Unmarshal(content, &p) != nil {
		return false
	}
	e := p["error"]
	if len(e) == 0 {
		return false
	}
	switch e[0] {
	case '"':
		var s string
		return json.Unmarshal(e, &s) == nil && s != ""
	case '{':
		var m map[string]json.RawMessage
		return json.Unmarshal(e, &m) == nil && len(m) > 0
	}
	return string(e) == "true"
}

// tooLarge is the error result of a tool whose answer exceeded the limit: it
// ran, and this is its outcome.
func tooLarge(limit int64) connectors.Result {
	b, _ := json.Marshal(map[string]string{
		"error":   "result_too_large",
		"message": fmt.Sprintf("The tool's result is larger than %d bytes.", limit),
	})
	return connectors.Result{Content: b, IsError: true}
}

// failure is the error result of a tools/call answered with a JSON-RPC
// error that may have come after the tool acted (see toolFailure): the
// server's code, message and data, under "error": "mcp_error".
func failure(werr *jsonrpc.Error) connectors.Result {
	p := struct {
		Error   string          `json:"error"`
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{"mcp_error", werr.Code, werr.Message, nil}
	if json.Valid(werr.Data) {
		p.Data = werr.Data
	}
	b, _ := json.Marshal(p)
	return connectors.Result{Content: b, IsError: true}
}
