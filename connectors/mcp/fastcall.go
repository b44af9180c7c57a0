package mcp

// The tools/call fast path.
//
// Through the SDK's client session, one tools/call answer is decoded four
// times (the SSE event, the JSON-RPC message, the result, each content
// block), each decode allocating a 32 KiB buffer, and passes through three
// goroutines before the caller sees it. On a warm session that was most of
// what Quiver spends on an MCP call.
//
// A pooled session therefore sends tools/call itself when it can: the
// session is initialized by the SDK (the handshake, capabilities, the
// session ID and the negotiated version stay the SDK's), and the call is the
// same JSON-RPC request with the same headers, on the same HTTP client and
// round tripper (credentials, attempt recording, size cap), answered as JSON
// or as an event stream, which it reads with one decode of the message and
// one of the result. Anything else the session does (tools/list, the
// standalone stream, closing) stays with the SDK.
//
// It keeps the client's side of the contract that the SDK keeps:
//   - requests the server makes on the call's stream are answered as the
//     SDK client answers them (replyTo): ping and roots/list (the SDK
//     offers the roots capability; Quiver has no roots) with a result,
//     sampling and elicitation (no handlers) and anything else with an
//     error;
//   - notifications/tools/list_changed drops the discovery cache; other
//     notifications are ignored;
//   - a stream that ends before the answer is resumed from its last event
//     ID (GET with Last-Event-ID), if the server gave event IDs;
//   - a call abandoned after it was sent gets notifications/cancelled.
//
// It is used only for protocol versions whose tools/call is the plain
// JSON-RPC request (no per-request _meta, no Mcp-Method headers), and not
// at all under MCPGODEBUG, whose switches change what the SDK does.
// TestFastCallMatchesSDK compares its results with the SDK's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastVersions are the protocol versions whose tools/call the fast path
// sends: the streamable-HTTP versions with the initialize handshake.
var fastVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// maxResumes bounds how often one call's stream is resumed without the
// server sending anything new.
const maxResumes = 2

// fastSession sends tools/call on a session the SDK initialized.
type fastSession struct {
	client    *http.Client
	endpoint  string
	version   string // negotiated protocol version
	sessionID string // "" for a stateless server
	maxBytes  int64
	// versionValue and sessionValue are the header values of version and
	// sessionID, made once.
	versionValue, sessionValue []string
	// toolsChanged runs on notifications/tools/list_changed; may be nil.
	toolsChanged func()
	// ids count up from 2^40, far from the SDK's own request IDs, which
	// count up from 1 on the same session, and exact as a float64 (servers,
	// the SDK's among them, may read an ID as one).
	ids atomic.Int64
}

// newFastSession returns the fast path of sess, or nil when calls on it
// must go through the SDK.
func newFastSession(sess *mcp.ClientSession, client *http.Client, endpoint string, maxBytes int64, toolsChanged func()) *fastSession {
	init := sess.InitializeResult()
	if init == nil || !fastVersions[init.ProtocolVersion] || os.Getenv("MCPGODEBUG") != "" {
		return nil
	}
	f := &fastSession{client: client, endpoint: endpoint, version: init.ProtocolVersion, sessionID: sess.ID(),
		maxBytes: maxBytes, toolsChanged: toolsChanged,
		versionValue: []string{init.ProtocolVersion}, sessionValue: []string{sess.ID()}}
	f.ids.Store(1 << 40)
	return f
}

// call sends tools/call and returns the raw result. Its errors are for
// classify, with the attempt ctx carries: a *jsonrpc.Error in the chain is
// the server's refusal.
func (f *fastSession) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	id := f.ids.Add(1)
	quoted, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, 96+len(quoted)+len(args))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":"tools/call","params":{"name":`...)
	body = append(body, quoted...)
	body = append(body, `,"arguments":`...)
	body = append(body, args...)
	body = append(body, "}}"...)

	resp, err := f.post(ctx, body)
	var result json.RawMessage
	if err == nil {
		result, err = f.answer(ctx, resp, id)
	}
	if err != nil && ctx.Err() != nil {
		// Abandoned, perhaps after the server got it: tell it to stop.
		f.cancelled(id)
	}
	return result, err
}

// post sends one JSON-RPC message with the session's headers.
func (f *fastSession) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"], req.Header["Accept"] = jsonType, acceptBoth
	f.setHeaders(req.Header)
	return f.client.Do(req)
}

// A request's header values, shared by every request (Header.Set makes a
// slice for each); nothing changes a value in place.
var (
	jsonType   = []string{"application/json"}
	acceptBoth = []string{"application/json, text/event-stream"}
)

func (f *fastSession) setHeaders(h http.Header) {
	h["Mcp-Protocol-Version"] = f.versionValue
	if f.sessionID != "" {
		h["Mcp-Session-Id"] = f.sessionValue
	}
}

// answer reads the response to request id.
func (f *fastSession) answer(ctx context.Context, resp *http.Response, id int64) (json.RawMessage, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The round tripper kept the start of the body for classify; a
		// JSON-RPC error in it is the server's own refusal.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		var m wireMessage
		if json.Unmarshal(head, &m) == nil && m.Error != nil {
			return nil, fmt.Errorf("tools/call: HTTP %d: %w", resp.StatusCode, m.Error)
		}
		return nil, fmt.Errorf("tools/call: HTTP %d", resp.StatusCode)
	}
	ct, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		ct = "" // as the SDK's baseMediaType: a bad parameter spoils the type too
	}
	switch ct {
	case "application/json":
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		var m wireMessage
		if err := decodeMessage(data, &m); err != nil {
			return nil, fmt.Errorf("tools/call: the answer is not JSON-RPC: %w", err)
		}
		if m.request {
			return nil, fmt.Errorf("tools/call: the answer is a request (%q), not an answer", m.Method)
		}
		if !sameID(m.ID, id) {
			return nil, fmt.Errorf("tools/call: the answer is for another request (id %s)", m.ID)
		}
		return m.outcome()
	case "text/event-stream":
		return f.stream(ctx, resp.Body, id)
	}
	return nil, fmt.Errorf("tools/call: unsupported content type %q", resp.Header.Get("Content-Type"))
}

func (m *wireMessage) outcome() (json.RawMessage, error) {
	if m.Error != nil {
		return nil, fmt.Errorf("tools/call: %w", m.Error)
	}
	if len(m.Result) == 0 {
		return nil, errors.New("tools/call: the answer has neither a result nor an error")
	}
	return m.Result, nil
}

// sameID reports whether raw is the number id, however the server spelled
// it: one that keeps IDs as doubles may write 1099511627777 back as
// 1099511627777.0 or 1.099511627777E+12, which the SDK reads as the same
// ID. Our IDs are below 2^53, so a float64 holds them exactly.
func sameID(raw json.RawMessage, id int64) bool {
	text := string(bytes.TrimSpace(raw))
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n == id
	}
	if text == "" || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return false // a string, null, an object: not a number
	}
	f, err := strconv.ParseFloat(text, 64)
	return err == nil && f == float64(id)
}

// errStreamEnded is a call's event stream ending without its answer.
var errStreamEnded = errors.New("tools/call: the event stream ended before the answer")

// stream reads an event stream until the answer to id, resuming it from its
// last event ID when it ends early.
func (f *fastSession) stream(ctx context.Context, body io.ReadCloser, id int64) (json.RawMessage, error) {
	var lastID, resumedFrom string
	for resumes := 0; ; {
		result, done, err := f.events(body, id, &lastID)
		if done {
			finish(body)
			return result, err
		}
		body.Close()
		if err == nil {
			err = errStreamEnded
		}
		if lastID == "" || ctx.Err() != nil || errors.Is(err, errTooLarge) || errors.Is(err, errUnanswered) {
			// An answer over the limit is not resumed: it stays over; nor is
			// a stream past its budget of other messages (callstream.go).
			return nil, err
		}
		if lastID == resumedFrom {
			if resumes++; resumes > maxResumes {
				return nil, err
			}
		} else {
			resumedFrom, resumes = lastID, 0
		}
		if body, err = f.resume(ctx, lastID); err != nil {
			return nil, err
		}
	}
}

// drainWait bounds how long a stream's end is waited for.
const drainWait = 100 * time.Millisecond

// finish hands what is left of a call's stream to its transport and
// returns. A server closes the stream right after the answer, and a stream
// read to its end leaves the connection to the next request; one closed
// early takes a new connection (a TCP handshake and two goroutines at both
// ends) next time. The h1 transport reads the end without the call waiting
// for it (h1Body.release), for up to drainWait, then closes the connection;
// a body of another transport is closed.
func finish(body io.ReadCloser) {
	if b, ok := body.(releaser); ok && b.release(drainWait) {
		return
	}
	body.Close()
}

// resume asks for the rest of a stream after lastID.
func (f *fastSession) resume(ctx context.Context, lastID string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	f.setHeaders(req.Header)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tools/call: resuming the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("tools/call: resuming the event stream: HTTP %d", resp.StatusCode)
	}
	// The round tripper bounds a call's resumed stream (callStream) when it
	// knows the call (its attempt); without one, it is bounded here alike.
	if callAttempt(ctx) != nil {
		return resp.Body, nil
	}
	return readCloser{meterStream(resp.Body, nil, f.maxBytes), resp.Body}, nil
}

// events reads one event stream (text/event-stream) and handles its
// messages; done is set once the answer to id came. It reads the format as
// the SDK does (mcp/event.go): a field's value is trimmed of white space,
// an event whose data is empty (a "priming" event, which servers send to
// give the stream an ID to resume from) is not a message, but one whose
// data is two empty lines is (and fails to decode), and an event the stream
// ends in without its closing blank line still counts. It is more lenient
// than the SDK in three ways, each of which would otherwise make a call
// that ran an unknown outcome: a lone CR ends a line, a byte order mark at
// the start is ignored, and a line without a colon is a field with an
// empty value, as the SSE format has it (the SDK fails the call on it).
func (f *fastSession) events(body io.Reader, id int64, lastID *string) (result json.RawMessage, done bool, err error) {
	buf := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(buf)
	sc := bufio.NewScanner(body)
	sc.Buffer((*buf)[:0], int(min(f.maxBytes, 1<<30))+1)
	sc.Split(eventLines())
	var data []byte
	var hasData bool
	event := ""
	// end handles the event read so far and starts the next.
	end := func() (json.RawMessage, bool, error) {
		defer func() { data, hasData, event = data[:0], false, "" }()
		if hasData && (event == "" || event == "message") && len(data) > 0 {
			return f.message(data, id)
		}
		return nil, false, nil
	}
	for first := true; sc.Scan(); first = false {
		line := sc.Bytes()
		if first {
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 { // the end of an event
			if result, done, err = end(); done {
				return result, done, err
			}
			continue
		}
		// A line without a colon is a field named by the whole line, with
		// an empty value (the SSE format).
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimSpace(value)
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if int64(len(data)+len(value)) > f.maxBytes {
				return nil, false, errTooLarge // the body's cap would end it too, had it one
			}
			data, hasData = append(data, value...), true
		case "id":
			*lastID = string(value)
		case "event":
			event = string(value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, err
	}
	// The stream's last event, if it had no blank line after it, counts
	// when its data is whole; one cut off in the middle (the server went
	// away) is dropped, and the stream resumed as any that ended early.
	if hasData && decodeFirst(data, new(json.RawMessage)) != nil {
		return nil, false, nil
	}
	return end()
}

// decodeFirst decodes the first JSON value of data into v, ignoring what
// follows it, as the SDK reads a message.
func decodeFirst(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err != nil && json.NewDecoder(bytes.NewReader(data)).Decode(v) == nil {
		return nil
	}
	return err
}

// eventLines splits an event stream into lines, which end with CRLF, LF or
// a lone CR. A CR that ends the bytes read so far ends its line at once (a
// server may wait after it); an LF that then follows is the same line end.
func eventLines() bufio.SplitFunc {
	afterCR := false
	return func(data []byte, atEOF bool) (int, []byte, error) {
		start := 0
		if afterCR && len(data) > 0 {
			afterCR = false
			if data[0] == '\n' {
				start = 1
			}
		}
		if i := bytes.IndexAny(data[start:], "\r\n"); i >= 0 {
			i += start
			if data[i] == '\r' {
				if i+1 == len(data) {
					afterCR = true
				} else if data[i+1] == '\n' {
					return i + 2, data[start:i], nil
				}
			}
			return i + 1, data[start:i], nil
		}
		if atEOF && len(data) > start {
			return len(data), data[start:], nil
		}
		return start, nil, nil
	}
}

// scanBufs holds the event scanners' first buffers (a larger event grows
// one of its own).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// message handles one message of a call's stream.
func (f *fastSession) message(data []byte, id int64) (json.RawMessage, bool, error) {
	var m wireMessage
	if err := decodeMessage(data, &m); err != nil {
		return nil, true, fmt.Errorf("tools/call: an event is not JSON-RPC: %w", err)
	}
	switch {
	case !m.request && sameID(m.ID, id):
		result, err := m.outcome()
		return result, true, err
	case m.Method == "notifications/tools/list_changed":
		if f.toolsChanged != nil {
			f.toolsChanged()
		}
	case m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null":
		go f.reply(m.ID, m.Method)
	}
	return nil, false, nil
}

// reply answers a request the server made on a call's stream.
func (f *fastSession) reply(id json.RawMessage, method string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.notify(ctx, replyTo(id, method))
}

// replyTo is the SDK client's answer to a request a server makes, as
// Quiver's sessions are set up: the SDK's default capabilities (roots, with
// none to list) and no sampling or elicitation handler.
func replyTo(id json.RawMessage, method string) []byte {
	failed := func(code int64, message string) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, message)
	}
	switch method {
	case "ping":
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
	case "roots/list":
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"roots":[]}}`, id)
	case "sampling/createMessage":
		return failed(codeUnsupportedMethod, "client does not support CreateMessage")
	case "elicitation/create":
		return failed(jsonrpc.CodeInvalidParams, "client does not support elicitation")
	}
	return failed(jsonrpc.CodeMethodNotFound, "method not supported by this client")
}

// cancelled tells the server a call was abandoned, as the SDK does.
func (f *fastSession) cancelled(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	go func() {
		defer cancel()
		f.notify(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the call's time ran out"}}`, id))
	}()
}

// notify posts a message that gets no answer (best effort).
func (f *fastSession) notify(ctx context.Context, body []byte) {
	if resp, err := f.post(ctx, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
	}
}
