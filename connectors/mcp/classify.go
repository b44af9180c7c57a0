package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// JSON-RPC codes the SDK makes up on the client's side: they never come from
// the server.
const (
	codeRejectedByTransport = -32005
	codeServerClosing       = -32004
	codeClientClosing       = -32003
	// codeUnsupportedMethod is the SDK client's answer to a request for
	// something it was given no handler for (sampling).
	codeUnsupportedMethod = -31001
)

// classify turns a failed MCP request into a *connectors.Error from what its
// attempt recorded and the SDK's error; see the package doc for the table.
func classify(a attemptState, err error, tgt *target) *connectors.Error {
	err, a.err = redact(err, tgt), redact(a.err, tgt)
	switch {
	case !a.started:
		return connectors.Errorf(connectors.KindUnreachable, err,
			"the request to the MCP server at %s was not sent", tgt.host)
	case a.err != nil && egress.IsBlocked(a.err):
		return connectors.Errorf(connectors.KindUnreachable, a.err, "%s", blockedWhere(a, tgt, "the MCP server at "))
	case a.err != nil && egress.IsConnectFailure(a.err):
		return connectors.Errorf(connectors.KindUnreachable, a.err,
			"the MCP server at %s could not be reached", tgt.host)
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		return connectors.Errorf(connectors.KindUpstreamAuth, err,
			"the MCP server at %s refused the credentials (HTTP %d): %s", tgt.host, a.status, refusalMessage(a, tgt))
	}
	if a.status == http.StatusTooManyRequests {
		// The server's own limit, whatever the body says: nothing ran, and
		// the same request may succeed after its delay.
		e := connectors.Errorf(connectors.KindUpstreamLimited, err,
			"the MCP server at %s limited the request (HTTP 429): %s", tgt.host, refusalMessage(a, tgt))
		e.RetryAfter = connectors.RetryAfter(a.header.Get("Retry-After"), time.Now())
		return e
	}
	werr := serverError(err)
	if werr != nil && (notProcessed(werr.Code) || a.status >= 400 && a.status < 500) {
		// Call has taken the tools/call errors that are its outcome
		// (toolFailure): a tools/call error left here was refused before it
		// was processed. Only invalid params (the SDK's answer to arguments
		// its schema refuses, and to an unknown tool) is about what the
		// caller sent; the rest (parse error, unknown method, the protocol
		// refusals, any error a 4xx carries) is about the request itself.
		kind := connectors.KindUpstreamRefused
		if werr.Code == jsonrpc.CodeInvalidParams {
			kind = connectors.KindRejected
		}
		return connectors.Errorf(kind, err, "the MCP server refused the request: %s", tgt.hide(werr.Message))
	}
	if a.status >= 400 && a.status < 500 {
		// The HTTP layer refused it (404 without our session, 405, 406,
		// 415...): nothing ran, and nothing in the arguments would change it.
		return connectors.Errorf(connectors.KindUpstreamRefused, err,
			"the MCP server at %s refused the request (HTTP %d): %s", tgt.host, a.status, refusalMessage(a, tgt))
	}
	if a.unanswered || errors.Is(err, errUnanswered) || errors.Is(a.err, errUnanswered) {
		// The call was sent; what came was other messages (notifications,
		// requests), more of them than the size limit, and never its answer.
		return connectors.Errorf(connectors.KindOutcomeUnknown, err,
			"the MCP server sent more than the size limit of other messages on the call's stream, and no answer")
	}
	if a.tooLarge || errors.Is(a.err, errTooLarge) {
		return connectors.Errorf(connectors.KindOutcomeUnknown, err, "the MCP server's answer was too large")
	}
	if isTimeout(err) || isTimeout(a.err) {
		return connectors.Errorf(connectors.KindOutcomeUnknown, err, "the MCP server did not answer in time")
	}
	if werr != nil {
		// Any other error to another request (an internal error answering
		// tools/list or initialize): the server failed, it did not refuse.
		return connectors.Errorf(connectors.KindOutcomeUnknown, err, "the MCP server failed the request: %s", tgt.hide(werr.Message))
	}
	return connectors.Errorf(connectors.KindOutcomeUnknown, err,
		"the connection to the MCP server was lost before it answered")
}

func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

// notProcessed reports whether a JSON-RPC error code says the server did
// not process the request: JSON-RPC's own request errors (which the SDK also
// answers for an unknown tool or arguments its schema refuses) and the MCP
// refusals made before a request is handled. Any other code may come after
// a tool acted.
func notProcessed(code int64) bool {
	switch code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams,
		mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeUnsupportedProtocolVersion,
		mcp.CodeURLElicitationRequired:
		return true
	}
	return false
}

// toolFailure returns the JSON-RPC error a tools/call was answered with when
// it is the call's outcome: an error code that does not say the request went
// unprocessed, from a server that accepted the request (not a 4xx).
func toolFailure(a attemptState, err error) *jsonrpc.Error {
	werr := serverError(err)
	if werr == nil || notProcessed(werr.Code) || a.status >= 400 && a.status < 500 {
		return nil
	}
	return werr
}

// sessionGone reports whether a request failed because our session is gone
// before the server ran anything: it never left (the session had already
// ended), or the server answered the session ID the request carried with
// 404, as the spec has it, or with the 400 the TypeScript SDK's example
// server, and the many servers written from it, send after a restart ("Bad
// Request: No valid session ID provided", as a JSON-RPC error with a null
// ID), or that its transport sends when it serves the whole process and was
// started afresh ("Bad Request: Server not initialized", likewise). A 404
// to a request without a session ID (a stateless session's) is
// no news of a session, and neither is one whose body is a JSON-RPC
// error answering the request itself: a server that gives its own errors
// HTTP statuses (a tool's "not found", say) answers so, perhaps after the
// tool acted, where the SDKs' lost-session answers carry a null ID, a
// string of their own or no JSON at all.
func sessionGone(a attemptState) bool {
	if !a.started {
		return true
	}
	if !a.session || a.err != nil {
		return false
	}
	switch a.status {
	case http.StatusNotFound:
		return !answersRequest(a)
	case http.StatusBadRequest:
		return lostSession(a.body)
	}
	return false
}

// answersRequest reports whether a refused response's body is a JSON-RPC
// message for the request's own ID.
func answersRequest(a attemptState) bool {
	if len(a.id) == 0 {
		return false
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(a.body, &m) != nil || len(m.ID) == 0 {
		return false
	}
	return sameRawID(m.ID, a.id)
}

// sameRawID reports whether two JSON-RPC IDs are the same: equal strings,
// or equal numbers however spelled (sameID).
func sameRawID(got, sent json.RawMessage) bool {
	got, sent = bytes.TrimSpace(got), bytes.TrimSpace(sent)
	if bytes.Equal(got, sent) {
		return string(got) != "null"
	}
	n, err := strconv.ParseInt(string(sent), 10, 64)
	return err == nil && sameID(got, n)
}

// lostSession reports whether a 400's body refuses the session itself: it
// names the Mcp-Session-Id header or a session ID it calls missing,
// unknown, invalid or expired (lostSessionID), or its whole message is a
// lost session's (lostSessionMessage), and if it is a JSON-RPC message, it
// answers no request (a null or absent ID), or it is the TypeScript
// transport's refusal of every request before an initialize
// (uninitialized). An error for our request's own ID may be about the
// tool's work, done or not, and so may one that only mentions a session
// ("browser session crashed", "the user's session expired after the
// order was placed": a session the tool holds): sending the request again
// could run it twice.
func lostSession(body []byte) bool {
	var m struct {
		ID      json.RawMessage `json:"id"`
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	isJSON := json.Unmarshal(body, &m) == nil
	if isJSON && len(m.ID) > 0 && string(bytes.TrimSpace(m.ID)) != "null" {
		return false
	}
	if lostSessionID.Match(body) {
		return true
	}
	if !isJSON {
		return lostSessionMessage.Match(body)
	}
	var rpc struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(m.Error, &rpc)
	for _, raw := range []json.RawMessage{m.Error, rpc.Message, m.Message} {
		var text string
		if json.Unmarshal(raw, &text) == nil && lostSessionMessage.MatchString(text) {
			return true
		}
	}
	return len(m.ID) > 0 && uninitialized(m.Error)
}

// lostSessionID is a session ID refused anywhere in a body, in the words
// of the SDKs ("No valid session ID provided", "Missing session ID",
// "Mcp-Session-Id header is required", "Invalid or expired session ID")
// and their kin. A session ID said to be bad is the transport's word: a
// tool's own session would be named ("invalid checkout session ID").
var lostSessionID = regexp.MustCompile(`(?i)\bmcp-session-id\b|\b(no valid|missing|unknown|invalid|expired)( or (missing|unknown|invalid|expired))? session[ _-]?id\b`)

// lostSessionMessage is a whole message that says only that the session
// is lost ("Session not found", "Invalid session", "invalid or expired
// session", "Session has expired"), after an optional "Bad Request:" or
// "Not Found:". The same words inside a longer message ("upstream login
// session expired", "websocket session terminated") are a tool's, perhaps
// after it acted.
var lostSessionMessage = regexp.MustCompile(`(?i)^\s*((bad request|not found)\s*:\s*)?(session (was |has been )?(not found|expired|has expired|is expired|unknown|terminated)|(no|unknown|invalid|missing|expired)( or (missing|unknown|invalid|expired))? (mcp )?session)\s*[.!]?\s*$`)

// uninitialized reports whether a JSON-RPC error is the TypeScript
// transport's "Bad Request: Server not initialized", which it sends, with a
// null ID, before handing the request to the server. Only those exact
// words: "not initialized" is any code's error too (a tool's database
// client, say), perhaps after the tool acted.
func uninitialized(e json.RawMessage) bool {
	var rpc struct {
		Message string `json:"message"`
	}
	return json.Unmarshal(e, &rpc) == nil && strings.EqualFold(strings.TrimSpace(rpc.Message), "Bad Request: Server not initialized")
}

// serverError returns the JSON-RPC error the server answered with, if err
// holds one. Errors the SDK makes up locally do not count.
func serverError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(e error) bool {
		if e == nil {
			return false
		}
		if w, ok := e.(*jsonrpc.Error); ok {
			switch w.Code {
			case codeRejectedByTransport, codeServerClosing, codeClientClosing:
			default:
				found = w
				return true
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			return walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if walk(inner) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}

// refusalMessage is the server's own words for a refused request when its
// body has them: a JSON "message", "error_description" or string "error", or
// one short line of text; with the credentials it was sent masked
// (tgt.hide), as a server may quote them back.
func refusalMessage(a attemptState, tgt *target) string { return tgt.hide(serverWords(a)) }

func serverWords(a attemptState) string {
	body := strings.TrimSpace(string(a.body))
	var obj map[string]any
	if json.Unmarshal([]byte(body), &obj) == nil {
		for _, field := range []string{"message", "error_description", "error", "detail"} {
			if s, ok := obj[field].(string); ok && strings.TrimSpace(s) != "" {
				return clip(s)
			}
		}
		if e, ok := obj["error"].(map[string]any); ok {
			if s, ok := e["message"].(string); ok && s != "" {
				return clip(s)
			}
		}
		return http.StatusText(a.status)
	}
	if body != "" && !strings.HasPrefix(body, "<") && !strings.Contains(body, "\n") {
		return clip(body)
	}
	return http.StatusText(a.status)
}

func clip(s string) string { return connectors.Clip(s, 300) }

// minHidden is the shortest credential hide masks: a shorter value (a
// header "X-Version: 2" or a query "region=eu") is no secret worth
// garbling a message for.
const minHidden = 6

// hide masks in s, a server's own words, every credential Quiver sends it:
// the Authorization value's token (bearer or OAuth), each header value, and
// each part of the endpoint that connectors.ShownURL masks. Only error
// paths call it.
func (t *target) hide(s string) string {
	if t == nil || s == "" {
		return s
	}
	secrets := append(connectors.HiddenURLParts(t.endpoint), t.credentials()...)
	return connectors.NewMasker(minHidden, secrets...).Mask(s)
}

// redact hides what of the tool's URL may be a credential from an error's
// text (connectors.HideURLs): the endpoint's, and that of any URL a
// redirect led to.
func redact(err error, tgt *target) error { return connectors.HideURLs(err, tgt.endpoint) }

// blockedWhere says what the egress guard refused for an attempt: the
// server's own address, or the one it redirected the request to. server
// comes before the server's host ("the MCP server at ", or "").
func blockedWhere(a attemptState, tgt *target, server string) string {
	var b *egress.BlockedError
	if a.redirected && errors.As(a.err, &b) {
		return fmt.Sprintf("%s%s redirected the request to %s, a loopback, link-local, private or reserved address, or one of this host's own, which Quiver may not reach",
			server, tgt.host, b.Addr)
	}
	return fmt.Sprintf("%s%s is on a loopback, link-local, private or reserved address, or one of this host's own, which Quiver may not reach", server, tgt.host)
}
