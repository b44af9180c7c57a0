package mcpserver

// Screening the requests the fast path did not take, before the SDK.
//
// The SDK checks every message of a POST before it handles any, and a
// method it does not know fails the whole request with a plain-text 400:
// no JSON-RPC error, a batch's other members unanswered, an unknown
// notification refused. It reads a numeric ID as a float64, so a request
// with ID 1.5 runs and is answered as ID 1, and 2^53+1 as 2^53. And it
// decodes leniently: text after the message is ignored, and of a member
// given twice the last one counts, so a tools/call whose name is given
// twice runs one of them. screen answers these as JSON-RPC 2.0 and MCP ask:
//
//	not one JSON value, or not UTF-8                  → 400, -32700 parse error, ID null
//	a message that is not an object; jsonrpc not      → 400, -32600 invalid request
//	"2.0"; an ID not a string or an integer within      (ID null unless the ID was good)
//	±2^53; a member of the envelope twice; a known
//	method sent with an ID when it is a notification,
//	or without one when it is not; no method, result
//	or error; initialize in a batch; a batch under
//	2025-06-18 or later
//	a request of a method the server does not have    → 200, -32601 method not found
//	a notification of one                             → dropped (202 if nothing is left)
//	params missing (or null) where the method needs   → 200, -32602 invalid params
//	them, params not an object, a member of params      (400 under 2026-07-28,
//	twice, or one MCP types as a string or an object    as the SDK sends it)
//	given as another kind (params.go; a tools/call's
//	arguments not an object among them)
//
// In a batch each member is judged alone: one refused here gets its error
// in the batch's answer (so does a request whose ID an earlier request of
// the batch has: -32600, where the SDK would drop it unanswered and not
// run), and the rest go on to the SDK, whose answers and
// these make one array. Anything not refused here reaches the SDK exactly
// as it came. Requests the SDK refuses for their headers (Accept,
// Content-Type, an unknown protocol version, Last-Event-ID) are not
// screened, so those refusals keep coming first. A batch where the
// protocol version has none (2025-06-18 and later) is 400, -32600, ID null,
// where the SDK answers it in plain text. Under
// protocol 2026-07-28 the SDK itself answers a request of an unknown
// method (-32601, HTTP 404), so screen leaves those to it; a notification
// of one it drops all the same.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/quiverhq/quiver/internal/jsondepth"
)

// methodKind says how the SDK's server takes a method.
type methodKind uint8

const (
	notification   methodKind = 1 << iota // sent without an ID
	paramsOptional                        // params may be left out, or null
	undeclared                            // of a capability the server does not declare (capabilities.go)
	since20260728                         // not a method before protocol 2026-07-28
)

// sdkMethods are the methods the SDK's server receives, and how (its
// serverMethodInfos, mcp/server.go, v1.8.0). TestSDKMethods checks that
// the SDK still handles each as said here; a method an SDK upgrade adds
// gets -32601 from screen until it is listed.
var sdkMethods = map[string]methodKind{
	"initialize":                       0,
	"ping":                             paramsOptional,
	"tools/list":                       paramsOptional,
	"tools/call":                       0,
	"prompts/list":                     paramsOptional | undeclared,
	"prompts/get":                      undeclared,
	"resources/list":                   paramsOptional | undeclared,
	"resources/templates/list":         paramsOptional | undeclared,
	"resources/read":                   undeclared,
	"resources/subscribe":              undeclared,
	"resources/unsubscribe":            undeclared,
	"completion/complete":              undeclared,
	"logging/setLevel":                 undeclared,
	"server/discover":                  paramsOptional | since20260728,
	"subscriptions/listen":             since20260728,
	"notifications/initialized":        notification | paramsOptional,
	"notifications/cancelled":          notification | paramsOptional,
	"notifications/roots/list_changed": notification | paramsOptional,
	"notifications/progress":           notification,
}

// maxDepth is the SDK's nesting limit (internal/json).
const maxDepth = jsondepth.SDKLimit

// verdict is what screen makes of one message.
type verdict uint8

const (
	pass   verdict = iota // for the SDK
	drop                  // a notification nobody handles: no answer
	refuse                // answered here
)

// judged is one message's verdict; a refusal's answer and, when the
// message is the whole request, its HTTP status.
type judged struct {
	verdict verdict
	status  int
	answer  []byte
}

// screen answers r, whose body serve read and the fast path did not take,
// when some of it is for screen to answer (see above), and reports whether
// it did; otherwise r is left as it came, for the SDK.
func (s *Server) screen(w http.ResponseWriter, r *http.Request, body []byte) bool {
	version, ok := sdkReads(r)
	if !ok {
		return false
	}
	start := skipSpace(body, 0)
	if !utf8.Valid(body) || jsondepth.Exceeds(body, maxDepth) {
		writeAnswer(w, http.StatusBadRequest, rpcError(nil, jsonrpc.CodeParseError, "Parse error: the body is not UTF-8 JSON nested at most 1000 deep"))
		return true
	}
	if end, ok := skipValue(body, start); !ok || skipSpace(body, end) != len(body) {
		writeAnswer(w, http.StatusBadRequest, rpcError(nil, jsonrpc.CodeParseError, "Parse error: the body is not one JSON value"))
		return true
	}
	if body[start] != '[' {
		switch j := judge(body, version, false); j.verdict {
		case pass:
			return false
		case drop:
			w.WriteHeader(http.StatusAccepted)
		default:
			writeAnswer(w, j.status, j.answer)
		}
		return true
	}
	if version != "" && version >= "2025-06-18" {
		// No batches since 2025-06-18: not a message of the protocol. The
		// SDK says so in plain text; a JSON-RPC client reads JSON-RPC.
		writeAnswer(w, http.StatusBadRequest, rpcError(nil, jsonrpc.CodeInvalidRequest,
			"Invalid Request: protocol "+version+" has no batches; send one message per request"))
		return true
	}
	return s.screenBatch(w, r, body[start:], version)
}

// sdkReads returns the protocol version of r when r is a POST whose
// headers the SDK takes, and false when it refuses them (its answer then
// stands, before anything the body holds).
func sdkReads(r *http.Request) (version string, ok bool) {
	if r.Method != http.MethodPost || len(r.Header.Values("Last-Event-ID")) > 0 ||
		!jsonContent(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) {
		return "", false
	}
	version = r.Header.Get(headerProtocol)
	return version, legacyVersions[version] || version == protocolStateless
}

// screenBatch answers a batch: its members refused here, and the others
// through the SDK.
func (s *Server) screenBatch(w http.ResponseWriter, r *http.Request, batch []byte, version string) bool {
	elements := arrayElements(bytes.TrimSpace(batch))
	if len(elements) == 0 {
		writeAnswer(w, http.StatusBadRequest, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the batch is empty"))
		return true
	}
	var kept, answers [][]byte
	ids := map[jsonrpc.ID]bool{} // the batch's requests' IDs
	for _, m := range elements {
		j := judge(m, version, true)
		if id := requestID(m); j.verdict == pass && id != nil {
			if ids[sdkID(id)] {
				// The SDK would neither run nor answer it.
				j = judged{refuse, http.StatusOK, rpcError(id, jsonrpc.CodeInvalidRequest,
					"Invalid Request: another request of the batch has this ID")}
			}
			ids[sdkID(id)] = true
		}
		switch j.verdict {
		case pass:
			kept = append(kept, m)
		case refuse:
			answers = append(answers, j.answer)
		}
	}
	switch {
	case len(kept) == len(elements):
		return false // nothing for screen: the SDK has it all
	case len(kept) == 0:
		if len(answers) == 0 {
			w.WriteHeader(http.StatusAccepted)
		} else {
			writeAnswer(w, http.StatusOK, joinArray(answers))
		}
		return true
	}
	rest := joinArray(kept)
	r.Body, r.ContentLength = readCloser{bytes.NewReader(rest)}, int64(len(rest))
	var got captured
	got.h = w.Header()
	s.handler.ServeHTTP(&got, r)
	switch {
	case got.status == http.StatusAccepted && len(answers) == 0: // dropped notifications, and the SDK's
		w.WriteHeader(http.StatusAccepted)
	case got.status == http.StatusAccepted: // only notifications and responses went on
		writeAnswer(w, http.StatusOK, joinArray(answers))
	case got.status == http.StatusOK && got.body.Len() > 0 && bytes.TrimSpace(got.body.Bytes())[0] == '[':
		writeAnswer(w, http.StatusOK, joinArray(append(arrayElements(bytes.TrimSpace(got.body.Bytes())), answers...)))
	default: // the SDK refused the rest whole: its answer stands
		if got.status != 0 {
			w.WriteHeader(got.status)
		}
		_, _ = w.Write(got.body.Bytes())
	}
	return true
}

// requestID is the ID of msg, a message judge passed, when it is a request
// (it has a method and an ID); nil otherwise.
func requestID(msg []byte) []byte {
	members, _ := objectMembers(msg)
	var id []byte
	method := false
	for _, m := range members {
		switch m.key {
		case "id":
			id = msg[m.value:m.end]
		case "method":
			method = true
		}
	}
	if !method {
		return nil
	}
	return id
}

// sdkID is a request's id as the SDK holds it (judge passes only strings
// and integers within ±2^53, which it reads as float64s): -0 is 0, and "1"
// is not 1.
func sdkID(id []byte) jsonrpc.ID {
	var v any
	_ = json.Unmarshal(id, &v) // judge passed it
	jid, _ := jsonrpc.MakeID(v)
	return jid
}

// judge screens one message, valid JSON, sent under protocol version,
// alone or (inBatch) in a batch.
func judge(msg []byte, version string, inBatch bool) judged {
	invalid := func(id []byte, why string) judged {
		return judged{refuse, http.StatusBadRequest, rpcError(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)}
	}
	// Under 2026-07-28 the SDK answers an unknown method itself, and sends
	// invalid params with HTTP 400 (errorStatus).
	stateless := version == protocolStateless
	paramsStatus := http.StatusOK
	if stateless {
		paramsStatus = http.StatusBadRequest
	}
	badParams := func(id []byte, why string) judged {
		if id == nil {
			return judged{verdict: drop} // a notification gets no answer
		}
		return judged{refuse, paramsStatus, rpcError(id, jsonrpc.CodeInvalidParams, "Invalid params: "+why)}
	}
	members, ok := objectMembers(msg)
	if !ok {
		return invalid(nil, "a message is a JSON object")
	}
	var env struct{ version, id, method, params, result, errorValue []byte }
	for _, m := range members {
		var slot *[]byte
		switch m.key {
		case "jsonrpc":
			slot = &env.version
		case "id":
			slot = &env.id
		case "method":
			slot = &env.method
		case "params":
			slot = &env.params
		case "result":
			slot = &env.result
		case "error":
			slot = &env.errorValue
		default:
			continue
		}
		if *slot != nil {
			return invalid(nil, strconv.Quote(m.key)+" is given twice")
		}
		*slot = msg[m.value:m.end]
	}
	// An error response's ID is null when the message it answers had none
	// that could be read: valid JSON-RPC, which the SDK refuses; this
	// server sent nothing it could answer, so it is taken and dropped.
	if string(env.id) == "null" && env.method == nil && env.errorValue != nil && string(env.version) == `"2.0"` {
		return judged{verdict: drop}
	}
	if env.id != nil && !goodID(env.id) {
		return invalid(nil, "an ID is a string or an integer of at most 2^53 in size")
	}
	id := env.id
	if string(env.version) != `"2.0"` {
		return invalid(id, `"jsonrpc" must be "2.0"`)
	}
	if env.method == nil {
		if env.result == nil && env.errorValue == nil || id == nil {
			return invalid(id, "a message has a method, or is a response with an ID and a result or an error")
		}
		return judged{verdict: pass} // a client's response
	}
	var method string
	if env.method[0] != '"' || json.Unmarshal(env.method, &method) != nil {
		return invalid(id, "the method is a string")
	}
	kind, known := sdkMethods[method]
	if known && !stateless && !offered(kind, version) {
		known = false // the SDK would answer it: -32601 (capabilities.go)
	}
	switch {
	case !known && id == nil:
		return judged{verdict: drop} // under 2026-07-28 too, where the SDK refuses it in plain text
	case !known && stateless:
		return judged{verdict: pass}
	case !known:
		return judged{refuse, http.StatusOK, rpcError(id, jsonrpc.CodeMethodNotFound, "Method not found: "+strconv.Quote(method))}
	case kind&notification != 0 && id != nil:
		return invalid(id, strconv.Quote(method)+" is a notification: it has no ID")
	case kind&notification == 0 && id == nil:
		return invalid(nil, strconv.Quote(method)+" is a request: it needs an ID")
	case inBatch && method == "initialize": // 2025-03-26, Lifecycle: it MUST NOT be
		return invalid(id, `"initialize" is not sent in a batch`)
	}
	params := env.params
	switch {
	case params == nil || string(params) == "null":
		if kind&paramsOptional == 0 {
			return badParams(id, strconv.Quote(method)+" needs params")
		}
		return judged{verdict: pass}
	case params[0] != '{':
		return badParams(id, "params must be an object")
	}
	// A member of the wrong kind (CallToolRequest's arguments not an
	// object among them) fails MCP's schema: a protocol error, not a tool's.
	if why := misshapen(method, params); why != "" {
		return badParams(id, why)
	}
	return judged{verdict: pass}
}

// goodID reports whether raw is an ID the SDK answers with itself: a
// string (valid JSON: the caller checked), or an integer a float64 holds
// exactly (the SDK reads numbers as float64).
func goodID(raw []byte) bool {
	if raw[0] == '"' {
		return true
	}
	_, ok := exactInt(raw)
	return ok
}

// rpcError is a JSON-RPC error response; a nil id is null.
func rpcError(id []byte, code int64, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	msg, _ := json.Marshal(message)
	b := make([]byte, 0, 64+len(id)+len(msg))
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), id...), `,"error":{"code":`...)
	b = strconv.AppendInt(b, code, 10)
	return append(append(append(b, `,"message":`...), msg...), "}}"...)
}

// writeAnswer writes a JSON answer with the SDK's headers.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Cache-Control"], h["Content-Type"] = noCache, jsonType
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// arrayElements splits the JSON array that is all of b (valid JSON) into
// its elements' texts.
func arrayElements(b []byte) [][]byte {
	var out [][]byte
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		end, _ := skipValue(b, i)
		out = append(out, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return out
}

// joinArray is a JSON array of elements.
func joinArray(elements [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(elements, []byte{','})...), ']')
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// captured holds what the SDK answered a batch's rest; its header is the
// real answer's, so what the SDK sets there stays set.
type captured struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.h }

func (c *captured) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captured) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(p)
}
