package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/jsondepth"
)

// The tools/call fast path.
//
// In stateless mode the SDK handles every POST by reading the body, decoding
// it as a batch and then as a message (twice: once to set up a session, once
// to serve it), connecting a fresh ServerSession, decoding params._meta two
// more times and the params once more, and answering through a jsonrpc2
// connection and a goroutine; each decode allocates a 32 KiB buffer. For a
// plain tools/call that is most of the agent endpoint's cost.
//
// fastCall answers one such request itself: one scan of the body (no
// decode), the same engine call the tool's SDK handler makes, and the
// response the SDK would write, byte for byte, with the usual result
// written directly rather than built and encoded (TestMCPFastPathMatchesSDK
// compares them). It takes only what it
// can prove the SDK would accept and answer with the handler's result; any
// other request (other methods, notifications, batches, unknown tools, odd
// ids, anything unusual in headers, _meta or JSON) goes to the SDK untouched,
// so every error and edge case keeps the SDK's answer.

// SDK protocol versions (mcp/shared.go).
const (
	protocolStateless = "2026-07-28" // SEP-2575: per-request _meta, no session
	headerProtocol    = "Mcp-Protocol-Version"
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	methodToolsCall   = "tools/call"
)

// legacyVersions are the protocol versions before SEP-2575 that the SDK
// server supports; a request carrying one (or none) runs on a synthesized
// session, with no per-request _meta.
var legacyVersions = map[string]bool{"": true, "2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true}

// The answer's header values, shared by every answer (Header.Set makes a
// slice for each); nothing changes a value in place.
var (
	noCache  = []string{"no-cache, no-transform"}
	jsonType = []string{"application/json"}
)

// fastTool is what the fast path needs of one listed tool.
type fastTool struct {
	// invoke runs the call, as the tool's SDK handler does.
	invoke invoker
	// headerBound is set when the input schema binds an argument to an
	// Mcp-Param-* header (x-mcp-header), which the SDK checks: such a tool's
	// calls go through the SDK.
	headerBound bool
	// typed is set when the tool is listed with an output schema
	// (typedResult).
	typed bool
}

// headerBound reports whether a tool's schema mentions x-mcp-header.
func headerBound(t *mcp.Tool) bool {
	b, err := json.Marshal(t.InputSchema)
	return err != nil || bytes.Contains(b, []byte("x-mcp-header"))
}

// fastOff is set by MCPGODEBUG, whose compatibility switches change what
// the SDK answers: with any of them, everything goes through the SDK.
func fastOff() bool { return os.Getenv("MCPGODEBUG") != "" }

// fastRequest is a tools/call the fast path takes. Its _meta is checked but
// not handed to the tool handler, which does not read it (handle: no
// progress notifications, nothing per client).
type fastRequest struct {
	id        jsonrpc.ID
	name      string
	arguments json.RawMessage
	stateless bool // protocol 2026-07-28
}

// fastCall answers r, whose body serve read, if it is a tools/call the fast
// path takes, and reports whether it did. If not, r is left as it came for
// the SDK.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, ts *toolset, body []byte) bool {
	version, ok := sdkReads(r)
	if s.sdkOnly || !ok {
		return false
	}
	req, ok := parseCall(body, version, &s.metas)
	if !ok {
		return false
	}
	tool, ok := ts.tools[req.name]
	if !ok || (req.stateless && (tool.headerBound || r.Header.Get(headerMethod) != methodToolsCall || r.Header.Get(headerName) != req.name)) {
		return false
	}

	// From here on the request is answered here: the call runs once.
	s.fastCalls.Add(1)
	ctx := r.Context()
	resp := &jsonrpc.Response{ID: req.id}
	var answer *calls.Response
	var err error
	if ts.paused != nil {
		err = ts.paused // refused before the engine (paused.go)
	} else {
		answer, err = tool.invoke(ctx, req.arguments)
	}
	var info []byte
	if req.stateless {
		info = ts.implJSON
	}
	data, ok := appendResult(appendResponseHead(make([]byte, 0, 224+3*len(bodyOf(answer))), req.id), answer, info, err, tool.typed)
	if ok {
		data = append(data, '}') // the usual answer, written directly
	} else {
		if resp.Result, err = encodeResult(s.answer(ctx, answer, err, tool.typed), req.stateless, ts.impl); err != nil {
			resp.Result, resp.Error = nil, wireError(err)
		}
		if data, err = jsonrpc.EncodeMessage(resp); err != nil {
			s.log.ErrorContext(r.Context(), "mcp: encoding a tools/call answer", "error", err)
			data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
		}
	}
	h := w.Header()
	h["Cache-Control"], h["Content-Type"] = noCache, jsonType
	if status := errorStatus(resp, req.stateless); status != 0 {
		w.WriteHeader(status)
	}
	_, _ = w.Write(data)
	return true
}

// appendResponseHead appends what jsonrpc.EncodeMessage writes of a
// response before its result: the version and the ID, which parseID made
// from an integer or a plain string (no character that needs escaping).
func appendResponseHead(dst []byte, id jsonrpc.ID) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case int64:
		dst = strconv.AppendInt(dst, v, 10)
	case string:
		dst = append(append(append(dst, '"'), v...), '"')
	}
	return append(dst, `,"result":`...)
}

// parseCall decodes a body that is one tools/call request the fast path
// takes, under the Mcp-Protocol-Version header version. Anything it is not
// sure the SDK reads the same way is refused. metas holds the _meta values
// accepted before under protocolStateless, which are not checked again.
func parseCall(body []byte, version string, metas *metaSet) (*fastRequest, bool) {
	// The SDK refuses nesting deeper than 1000 and reads its JSON with
	// another decoder; keep to plain, valid UTF-8 objects.
	if !utf8.Valid(body) || jsondepth.Exceeds(body, jsondepth.SDKLimit) {
		return nil, false
	}
	var msg struct{ jsonrpc, id, method, params []byte }
	var params struct{ name, arguments, meta []byte }
	// Each known member once; any other member, or a repeated one, is
	// refused.
	take := func(slot *[]byte, v []byte) bool {
		if *slot != nil {
			return false
		}
		*slot = v
		return true
	}
	if !eachMember(body, func(k string, v []byte) bool {
		switch k {
		case "jsonrpc":
			return take(&msg.jsonrpc, v)
		case "id":
			return take(&msg.id, v)
		case "method":
			return take(&msg.method, v)
		case "params":
			return take(&msg.params, v)
		}
		return false
	}) {
		return nil, false
	}
	if string(msg.jsonrpc) != `"2.0"` || string(msg.method) != `"`+methodToolsCall+`"` {
		return nil, false
	}
	id, ok := parseID(msg.id)
	if !ok {
		return nil, false
	}
	if !eachMember(msg.params, func(k string, v []byte) bool {
		switch k {
		case "name":
			return take(&params.name, v)
		case "arguments":
			return take(&params.arguments, v)
		case "_meta":
			return take(&params.meta, v)
		}
		return false
	}) {
		return nil, false
	}
	name, ok := plainString(params.name)
	if !ok || (params.arguments != nil && params.arguments[0] != '{' && string(params.arguments) != "null") {
		return nil, false // arguments not an object: screen's -32602
	}
	req := &fastRequest{id: id, name: name, arguments: params.arguments}
	if version == protocolStateless && params.meta != nil && metas.has(params.meta) {
		req.stateless = true
		return req, true
	}
	var meta map[string]json.RawMessage
	if raw := params.meta; raw != nil {
		// The SDK reads _meta as a map[string]any and refuses the call when
		// it cannot (a number beyond a float64, such as 1e400, anywhere in
		// it): such a request goes to the SDK for that answer.
		if raw[0] != '{' || json.Unmarshal(raw, &meta) != nil || json.Unmarshal(raw, new(map[string]any)) != nil {
			return nil, false
		}
	}
	pv, hasPV := meta[mcp.MetaKeyProtocolVersion]
	switch {
	case !hasPV && legacyVersions[version]:
		// A pre-SEP-2575 request: the SDK synthesizes its session.
	case hasPV && version == protocolStateless && string(pv) == `"`+protocolStateless+`"`:
		// SEP-2575: the header and _meta agree; clientCapabilities must be
		// there and clientInfo, if there, must read as the SDK reads them.
		if !metaReads(meta[mcp.MetaKeyClientCapabilities], new(clientCapabilities)) {
			return nil, false
		}
		if ci, ok := meta[mcp.MetaKeyClientInfo]; ok && !metaReads(ci, new(mcp.Implementation)) {
			return nil, false
		}
		req.stateless = true
		metas.add(params.meta)
	default:
		return nil, false
	}
	return req, true
}

// clientCapabilities mirrors the SDK's clientCapabilitiesV2, the shape of
// _meta's clientCapabilities under SEP-2575.
type clientCapabilities struct {
	mcp.ClientCapabilities
	//lint:ignore SA1019 the SDK still accepts roots during the deprecation window; refusing it here would differ from the SDK
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// metaReads reports whether a _meta value is an object that decodes into v.
// encoding/json matches keys case-insensitively where the SDK does not, so
// it refuses more, never less.
func metaReads(raw json.RawMessage, v any) bool {
	return len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, v) == nil
}

// parseID reads a request ID the SDK reads the same way: an integer that a
// float64 holds exactly (the SDK decodes it as one), or a string without
// escapes. A missing or null ID (a notification) is refused.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	v, ok := exactInt(raw)
	if !ok {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(v)) // as the SDK makes it
	return id, err == nil
}

// exactInt reads a JSON integer, no fraction or exponent, that a float64
// holds exactly (at most 2^53 in size).
func exactInt(raw []byte) (int64, bool) {
	n := raw
	if len(n) > 0 && n[0] == '-' {
		n = n[1:]
	}
	if len(n) == 0 || len(n) > 16 || (n[0] == '0' && len(n) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range n {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<53 {
		return 0, false
	}
	if raw[0] == '-' {
		v = -v
	}
	return v, true
}

// plainString reads a JSON string of printable ASCII without escapes.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(s), true
}

// encodeResult is the result as the SDK sends it: Server.callTool turns nil
// content into [], and under SEP-2575 ServerSession.handle marks the result
// complete and names the server in its _meta.
func encodeResult(res *mcp.CallToolResult, stateless bool, impl *mcp.Implementation) (json.RawMessage, error) {
	if res.Content == nil {
		res2 := *res
		res2.Content = []mcp.Content{}
		res = &res2
	}
	if stateless {
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			res.Meta[mcp.MetaKeyServerInfo] = impl
		}
	}
	// jsonrpc2.marshalToRaw: an encoder without HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if stateless {
		// The result type is unexported; CallToolResult.MarshalJSON writes
		// it after every other field (the handler leaves it unset, and
		// sets no inputRequests).
		if res.InputRequests != nil || bytes.Contains(b, []byte(`"resultType"`)) || len(b) < 2 || b[len(b)-1] != '}' {
			return nil, errors.New("mcp: unexpected tool result shape")
		}
		out := make([]byte, 0, len(b)+24)
		out = append(out, b[:len(b)-1]...)
		if len(b) > 2 {
			out = append(out, ',')
		}
		out = append(append(out, `"resultType":"complete"`...), '}')
		b = out
	}
	return b, nil
}

// wireError is jsonrpc2's toWireError: a handler's error as the SDK sends
// it.
func wireError(err error) error {
	var w *jsonrpc.Error
	if errors.As(err, &w) {
		if e, ok := err.(*jsonrpc.Error); ok {
			return e
		}
		return &jsonrpc.Error{Code: w.Code, Message: err.Error()}
	}
	return &jsonrpc.Error{Message: err.Error()}
}

// errorStatus is the SDK's extractErrorStatus: under SEP-2575 some JSON-RPC
// errors carry an HTTP status.
func errorStatus(resp *jsonrpc.Response, stateless bool) int {
	var w *jsonrpc.Error
	if !stateless || resp.Error == nil || !errors.As(resp.Error, &w) {
		return 0
	}
	switch w.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, -32022, -32021: // unsupported protocol version, missing client capabilities
		return http.StatusBadRequest
	}
	return 0
}

// jsonContent is the SDK's Content-Type check.
func jsonContent(v string) bool {
	if v == "application/json" {
		return true // what clients send, read without ParseMediaType's map
	}
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// acceptsBoth is the SDK's Accept check (streamableAccepts): the client
// takes both JSON and an event stream.
func acceptsBoth(values []string) bool {
	if len(values) == 1 && values[0] == "application/json, text/event-stream" {
		return true // what the SDKs send, read without splitting
	}
	var jsonOK, streamOK bool
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}
