package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"

	"github.com/quiverhq/quiver/internal/accounts"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// keyArg is the argument that carries a non-retryable action's
// Idempotency-Key over MCP; altKeyArg is its name for an action that has
// an idempotency_key argument of its own (keyName).
const (
	keyArg    = "idempotency_key"
	altKeyArg = "quiver_idempotency_key"
)

// Meta keys of a successful result.
const (
	metaCallID   = "quiver/call_id"
	metaReplayed = "quiver/replayed"
)

// handle returns the tools/call handler of one action, over invoke;
// typed is set when the action is listed with an output schema.
func (s *Server) handle(invoke invoker, typed bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		resp, err := invoke(ctx, args)
		return s.answer(ctx, resp, err, typed), nil
	}
}

func bodyOf(resp *calls.Response) []byte {
	if resp == nil {
		return nil
	}
	return resp.Body
}

// answer is the MCP result of the engine's answer, for an action listed
// with an output schema when typed is set.
func (s *Server) answer(ctx context.Context, resp *calls.Response, err error, typed bool) *mcp.CallToolResult {
	if err != nil {
		r := s.toolError(ctx, err)
		if typed {
			r.StructuredContent = nil // typedResult
		}
		return r
	}
	return result(resp, typed)
}

// invoker runs one action's tools/call through the engine.
type invoker func(ctx context.Context, args json.RawMessage) (*calls.Response, error)

// invoke returns the invoker of one action; key names its key argument,
// "" for a retryable action. The call body is the REST API's, so a
// tools/call and a POST …/call/ with the same key and arguments are the
// same request to the engine.
//
// Only the key argument is checked here, as the API checks the
// Idempotency-Key header before anything else; everything else (the rate
// limit, duplicate members, the tool and action, a read-only API key, a
// missing key, the arguments' shape) is the engine's to judge, in its
// order, so a call gets the code REST gives the same call. Arguments the
// key cannot be taken from (the key twice; not an object, which screen
// refuses before a call gets here) go on whole and keyless, for the engine
// to refuse.
func (s *Server) invoke(account, toolID int64, action, key string) invoker {
	return s.invokeAs(account, toolID, action, key, false)
}

// invokeAs is invoke; uncountedReuse is calls.Request's.
func (s *Server) invokeAs(account, toolID int64, action, key string, uncountedReuse bool) invoker {
	act, _ := json.Marshal(action)
	prefix := []byte(`{"tool":` + strconv.FormatInt(toolID, 10) + `,"action":` + string(act) + `,"arguments":`)
	return func(ctx context.Context, args json.RawMessage) (*calls.Response, error) {
		if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
			args = json.RawMessage("{}")
		}
		creq := calls.Request{AccountID: account, ReadOnly: accounts.PrincipalFrom(ctx).ReadOnly, UncountedReuse: uncountedReuse}
		if key != "" {
			rest, k, found, err := takeKey(args, key)
			if err != nil {
				return nil, err
			}
			if found {
				args, creq.Key, creq.HasKey = rest, k, true
			}
		}
		body := make([]byte, 0, len(prefix)+len(args)+1)
		body = append(append(append(body, prefix...), args...), '}')
		creq.Body = body
		resp, err := s.opts.Calls.Call(ctx, creq)
		if key != "" && err != nil {
			err = keyWorded(err, key, creq.HasKey)
		}
		return resp, err
	}
}

// invokeListed is invoke for a listed tool whose {tool_name} part comes
// from base. Names move when the agent's tools change (the lowest ID of
// tools with one base keeps the plain name: names.go), so a retry may name
// a tool other than the one its key was first used with. When the engine
// answers idempotency_key_reused, and the key was first used for this
// action of another tool of the same base (or of one that can no longer
// be read), the call goes to that tool: the REST call the key was first
// used with, which replays if the arguments are the same. It costs a key
// lookup on that 409 only.
func (s *Server) invokeListed(account, toolID int64, base, action, key string) invoker {
	if key == "" {
		return s.invoke(account, toolID, action, key) // retryable: no key to have been first used elsewhere
	}
	// The engine leaves its 409 uncounted: this call may still replay.
	inv := s.invokeAs(account, toolID, action, key, true)
	return func(ctx context.Context, args json.RawMessage) (*calls.Response, error) {
		resp, err := inv(ctx, args)
		if p, ok := problem.As(err); !ok || p.Code != problem.IdempotencyKeyReused {
			return resp, err
		}
		if to, ok := s.firstUsedOn(ctx, account, toolID, base, action, key, args); ok {
			return s.invoke(account, to, action, key)(ctx, args)
		}
		s.opts.Calls.CountConflict(problem.IdempotencyKeyReused)
		return resp, err
	}
}

// firstUsedOn reports the tool the key in args was first used with, when
// it was for action of another tool of base (invokeListed).
func (s *Server) firstUsedOn(ctx context.Context, account, toolID int64, base, action, key string, args json.RawMessage) (int64, bool) {
	_, k, found, err := takeKey(args, key)
	if err != nil || !found {
		return 0, false
	}
	ks, err := s.opts.Calls.Key(ctx, account, k)
	if err != nil || ks.Tool == toolID || ks.Action != action || !s.hadBase(ctx, account, ks.Tool, base) {
		return 0, false
	}
	return ks.Tool, true
}

// hadBase reports whether tool id's name could have given the {tool_name}
// part base: it sanitizes to base, or the tool can no longer be read
// (deleted, reset), so its name cannot be told.
func (s *Server) hadBase(ctx context.Context, account, id int64, base string) bool {
	rt, err := s.opts.Tools.Resolve(ctx, account, id)
	return err != nil || sanitize(resolvedName(rt)) == base
}

// keyWorded words the engine's refusals that speak of the Idempotency-Key
// header and the request body for MCP, where the key is the argument key
// and the body is the action and its other arguments; hasKey is whether
// the call carried it. The code, and every other field, stays REST's.
func keyWorded(err error, key string, hasKey bool) error {
	p, ok := problem.As(err)
	if !ok {
		return err
	}
	var msg string
	switch {
	case p.Code == problem.IdempotencyKeyRequired && !hasKey:
		msg = "This action is not retryable: pass your unique key for this operation as the " + key + " argument."
	case p.Code == problem.IdempotencyKeyReused:
		msg = "This " + key + " was already used for a call with other arguments (or of another action); use a new key for a new operation."
	case p.Code == problem.RequestInProgress:
		msg = "A call with this " + key + " is still running; retry after a moment."
	case p.Code == problem.OutcomeUnknownConflict && p.Status == 0:
		// The later answers' wording; the first (504) names no header.
		msg = "The earlier call with this " + key + " was dispatched and its outcome is unknown; it will not be run again. Check the tool, then use a new key for a new operation."
	default:
		return err
	}
	q := *p
	q.Message = msg
	return &q
}

// takeKey takes the member name out of an arguments object and checks it
// as the API checks the Idempotency-Key header. found is false, and args
// are to go on whole, when they are not an object or hold name more than
// once (a duplicate member: the engine answers invalid_json). The other
// members keep their exact text and order.
func takeKey(args json.RawMessage, name string) (rest json.RawMessage, key string, found bool, err error) {
	ms, ok := objectMembers(args)
	if !ok {
		return nil, "", false, nil
	}
	at := -1
	for i, m := range ms {
		if m.key == name {
			if at >= 0 {
				return nil, "", false, nil
			}
			at = i
		}
	}
	if at < 0 {
		return nil, "", false, nil
	}
	m := ms[at]
	if json.Unmarshal(args[m.value:m.end], &key) != nil || !calls.ValidKey(key) {
		return nil, "", false, problem.New(problem.InvalidIdempotencyKey,
			"The %s must be a string of 1 to 255 printable ASCII characters, without leading or trailing spaces.", name)
	}
	// Cut the member with the comma after it, or, for the last one, the
	// comma before it.
	from, to := m.start, m.end
	switch {
	case at+1 < len(ms):
		to = ms[at+1].start
	case at > 0:
		from = ms[at-1].end
	}
	out := make([]byte, 0, len(args)-(to-from))
	out = append(append(out, args[:from]...), args[to:]...)
	return out, key, true, nil
}

// answerOf is what the engine's 200 body says the tool answered: as the
// engine gave it for a call it dispatched, else decoded from the body.
func answerOf(resp *calls.Response) (*calls.Answer, bool) {
	if resp.Answer != nil {
		return resp.Answer, len(resp.Answer.Result) > 0
	}
	var b calls.Answer
	if err := json.Unmarshal(resp.Body, &b); err != nil || len(b.Result) == 0 {
		return nil, false
	}
	return &b, true
}

// result turns the engine's answer, first or replayed, into an MCP result:
// the result JSON as text, and as structured content the tool's own
// (structured_content) or else the result when it is an object; a tool's
// own MCP content (result_type mcp_content: plain text, images, resources)
// as that content. appendResult writes the same as the SDK would encode
// it, for the usual JSON result. typed is set for an action listed with an
// output schema (typedResult).
func result(resp *calls.Response, typed bool) *mcp.CallToolResult {
	b, ok := answerOf(resp)
	if !ok {
		// Not the engine's usual body: hand it over whole.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(resp.Body)}}}
	}
	r := &mcp.CallToolResult{IsError: b.IsError, Content: []mcp.Content{&mcp.TextContent{Text: string(b.Result)}},
		Meta: mcp.Meta{metaCallID: b.CallID}}
	content, isContent := toolContent(b)
	if isContent {
		r.Content = content
	}
	structured := b.StructuredContent
	if len(structured) == 0 && !isContent {
		structured = b.Result
	}
	switch {
	case typed && b.IsError:
	case len(structured) > 0 && structured[0] == '{':
		// MCP's structuredContent is an object: a client refuses
		// the whole answer otherwise.
		r.StructuredContent = structured
	case typed:
		// The tool broke its own output schema: said another way, the
		// answer would be refused whole by a client that checks it.
		r.IsError = true
		r.Content = append([]mcp.Content{&mcp.TextContent{Text: noStructuredContent}}, r.Content...)
	}
	if resp.Replayed {
		r.Meta[metaReplayed] = true
	}
	return r
}

// typedResult: an action whose tool declared an output schema is listed
// with it, and a client may check a result's structured content against
// it (MCP: clients SHOULD). A successful result then carries the tool's
// structured content (structured_content, else result, which is the
// structured content whenever the tool's text was its serialization or it
// gave no JSON text). An error result carries none, Quiver's own refusals
// included: their envelope is not the tool's output, and some clients
// (the TypeScript SDK's) check structured content even on an error, while
// none asks an error for it. The envelope stays the text. A successful
// result with no object to carry (the tool answered plain text, or JSON
// that is not an object) is answered as an error, its content after
// noStructuredContent: a client that checks the schema (the TypeScript
// SDK's) refuses a typed result without structured content whole, and the
// agent would get nothing of what the tool said.

// noStructuredContent heads the content of a typed action's successful
// result that has no structured content (typedResult).
const noStructuredContent = "The tool's answer has no structured content (a JSON object) as its output schema declares; what it answered follows."

// toolContent is the MCP content a tool answered with, when the engine's
// answer carries it as such. Content of a kind the SDK does not know (a
// later protocol's) is not: it goes on as the text of its JSON.
func toolContent(b *calls.Answer) ([]mcp.Content, bool) {
	if b.ResultType != calls.ResultTypeMCPContent || b.Result[0] != '[' {
		return nil, false
	}
	var r mcp.CallToolResult
	raw := append(append([]byte(`{"content":`), b.Result...), '}')
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false
	}
	if r.Content == nil {
		r.Content = []mcp.Content{}
	}
	return r.Content, true
}

// toolError is a refused or failed call as an MCP tool error: the text is
// the REST API's envelope, with the same code, and so is the structured
// content, except for an action listed with an output schema (answer).
func (s *Server) toolError(ctx context.Context, err error) *mcp.CallToolResult {
	p, ok := problem.As(err)
	if !ok {
		p = internalProblem(ctx, s.log, err)
	}
	// The HTTP answer is a 200: the request's log line and metrics learn
	// of the failure from this.
	logging.NoteAnswered(ctx, p.HTTPStatus(), string(p.Code))
	env := envelope(ctx, p, true)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(env)}},
		StructuredContent: json.RawMessage(env)}
}

// internalProblem is the problem of an error that is not one: an unavailable
// database, or a bug (logged).
func internalProblem(ctx context.Context, log *slog.Logger, err error) *problem.Error {
	if errors.Is(err, store.ErrUnavailable) {
		return &problem.Error{Code: problem.Unavailable, Message: "The database is unavailable; nothing was run. Retry shortly.", RetryAfter: 1}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &problem.Error{Code: problem.Unavailable, Message: "The request ended before the agent's tools could be read. Retry shortly.", RetryAfter: 1}
	}
	log.ErrorContext(ctx, "mcp: internal error", "error", err)
	return problem.New(problem.Internal, "Something went wrong on our side; the request ID helps us find it.")
}

// envelope is the API's error body: {"error", "message", …extra fields}.
// Over HTTP, a Retry-After header goes with it and only
// request_in_progress repeats it as retry_after, as the API's own answers
// do; a tool error (inResult) has no header, so retry_after carries the
// header's value for every code that sets one (rate_limited, unavailable,
// request_in_progress).
func envelope(ctx context.Context, p *problem.Error, inResult bool) []byte {
	m := make(map[string]any, 4+len(p.Extra))
	for k, v := range p.Extra {
		m[k] = v
	}
	m["error"] = p.Code
	m["message"] = p.Message
	if p.Fields != nil {
		m["fields"] = p.Fields
	}
	if p.RetryAfter > 0 && (inResult || p.Code == problem.RequestInProgress) {
		m["retry_after"] = p.RetryAfter
	}
	if p.Code == problem.Internal {
		m["request_id"] = logging.RequestID(ctx)
	}
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"error": p.Code, "message": p.Message})
	}
	return b
}

// appendResult appends the JSON of the MCP result of the engine's usual
// answer exactly as the SDK encodes result(resp) (fast.go's encodeResult),
// without building it: _meta's keys in order, the text HTML-escaped as
// encoding/json escapes it, structured content compacted and escaped as
// json.Marshal does a RawMessage. serverInfo, the server's Implementation
// as JSON, is set under the 2026-07-28 protocol only. typed is result's.
// ok is false for an error, an answer that is not the usual body, and a
// typed action's answer that is not a successful object (typedResult);
// encode answer() then.
func appendResult(dst []byte, resp *calls.Response, serverInfo []byte, callErr error, typed bool) (out []byte, ok bool) {
	if callErr != nil {
		return dst, false
	}
	b, ok := answerOf(resp)
	if !ok || b.ResultType != "" || b.StructuredContent != nil {
		return dst, false // a tool's own content: result() and the SDK's encoding
	}
	if typed && (b.IsError || b.Result[0] != '{') {
		return dst, false // result() answers these otherwise than an untyped action's
	}
	dst = append(dst, `{"_meta":{`...)
	if serverInfo != nil {
		dst = append(append(append(dst, `"`...), mcp.MetaKeyServerInfo...), `":`...)
		dst = append(append(dst, serverInfo...), ',')
	}
	dst = appendQuoted(append(dst, `"`+metaCallID+`":`...), b.CallID)
	if resp.Replayed {
		dst = append(dst, `,"`+metaReplayed+`":true`...)
	}
	dst = append(appendQuoted(append(dst, `},"content":[{"type":"text","text":`...), b.Result), `}]`...)
	if b.Result[0] == '{' {
		var err error
		if dst, err = appendCompact(append(dst, `,"structuredContent":`...), b.Result); err != nil {
			return dst, false
		}
	}
	if b.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if serverInfo != nil {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, '}'), true
}
