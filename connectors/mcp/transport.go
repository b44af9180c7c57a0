package mcp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// maxErrorBody is how much of a refused response's body is kept for its
// message.
const maxErrorBody = 4 << 10

// attempt records what happened on the wire to the first POST made with a
// context that carries it: the request an MCP method sent.
type attempt struct {
	claimed atomic.Bool
	// budget, set on a tools/call's attempt only, bounds the call's event
	// streams (callstream.go).
	budget *streamBudget

	mu  sync.Mutex
	rec attemptState
}

// attemptState is what an attempt recorded.
type attemptState struct {
	started  bool        // the POST reached the HTTP transport
	err      error       // the round trip failed
	status   int         // the status it got
	header   http.Header // the headers of a refused response
	body     []byte      // the start of a refused response's body
	tooLarge bool        // the response exceeded MaxResponseBytes
	// unanswered is set when a call's event stream carried more than
	// MaxResponseBytes of other messages, or one over it (errUnanswered).
	unanswered bool
	// redirected is set when the request was answered with a redirect and
	// the one recorded is the client's follow-up.
	redirected bool
	// Of a refused request only (kept off the path of an answered one):
	session bool            // it carried an Mcp-Session-Id
	id      json.RawMessage // its JSON-RPC ID, if it had one
}

type attemptKey struct{}

// withAttempt returns ctx carrying a.
func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// claimAttempt makes the request being sent the one ctx's attempt records;
// only the first caller wins.
func claimAttempt(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	if a == nil || !a.claimed.CompareAndSwap(false, true) {
		return nil
	}
	a.mu.Lock()
	a.rec.started = true
	a.mu.Unlock()
	return a
}

// snapshot returns a copy of what a recorded.
func (a *attempt) snapshot() attemptState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec
}

// roundTripper adds a tool's credentials to requests for its own origin only,
// records attempts, and caps every response body at maxBytes.
type roundTripper struct {
	base     http.RoundTripper
	target   *target
	maxBytes int64
	// replaced, set on the SDK session's own client only, is told of a
	// response that names a session other than the one its request
	// carried: the server replaced our session. The response goes on to
	// the SDK without the header, which would otherwise fail the request
	// (and break the session) after the server had answered it: the call
	// has its answer, and the session is retired for the next.
	replaced func()
	// reopened, set on a stateful session's own client only, is told of a
	// standalone event stream opened after the session's first, other than
	// by resuming from an event ID: while the stream was down the server
	// could not say its tool list changed, and only a stream resumed so
	// (from its event store) replays what it said meanwhile. A server that
	// ends its stream on purpose for the client to poll it (SEP-1699) does
	// so with event IDs, so polling is no reason to list again.
	reopened func()
	// refused, set on the SDK session's own client only, is told of a 401
	// or 403 answer before the SDK reads it: the SDK may then end the
	// session, and that end is our credentials', not the server's news
	// (pool.connect).
	refused func()
	streams atomic.Int32
}

// client is an HTTP client over base through tgt's roundTripper: every
// request to the tool's server, the SDK's session, the fast path's and a
// probe alike, goes through one.
func (c *Connector) client(base http.RoundTripper, tgt *target) *http.Client {
	return &http.Client{Transport: &roundTripper{base: base, target: tgt, maxBytes: c.opts.MaxResponseBytes}}
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if (rt.target.auth != "" || len(rt.target.headers) > 0) && origin(req.URL) == rt.target.origin {
		req = req.Clone(req.Context())
		for name, value := range rt.target.headers {
			req.Header.Set(name, value)
		}
		if rt.target.auth != "" {
			req.Header.Set("Authorization", rt.target.auth)
		}
	}
	var a *attempt
	if req.Method == http.MethodPost {
		a = claimAttempt(req.Context())
		// An Idempotency-Key among the configured headers would let
		// net/http send a message twice on a broken connection.
		req = connectors.SentOnce(req)
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		if a != nil {
			a.mu.Lock()
			a.rec.err = err
			a.mu.Unlock()
		}
		return resp, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Its body is the raw connection, which no context governs: a read
		// of it (the SDK's, or ours for an error's message) would wait for
		// as long as the server holds it. MCP never switches protocols.
		resp.Body.Close()
		err := errSwitchedProtocols
		if a != nil {
			a.mu.Lock()
			a.rec.err = err
			a.mu.Unlock()
		}
		return nil, err
	}
	if rt.replaced != nil {
		rt.checkSession(req, resp)
	}
	if rt.refused != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		rt.refused()
	}
	ungzip(resp)
	// Every body is capped, whatever its status and whoever reads it: the
	// SDK reads a refused response's body whole, and a DELETE's answer or a
	// redirect's are no smaller for being nobody's attempt. The one
	// exception is the session's standalone event stream (a GET answered
	// 200 with events), which lives as long as the session: its events are
	// each bounded by the SDK (MaxEventSize, set to maxBytes in dial), and
	// a cap on its total would cut a healthy session after enough
	// notifications.
	// A GET that follows a redirect (req.Response set) is some request's
	// answer, not the standalone stream, and is capped. A GET made for a
	// tools/call (resuming its stream, or led to by a redirect) is bounded
	// as the call's POST stream is, with the same budget.
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && sse {
		if ca := callAttempt(req.Context()); ca != nil {
			resp.Body = readCloser{meterStream(resp.Body, ca, rt.maxBytes), resp.Body}
			return resp, nil
		}
		if a == nil && req.Response == nil {
			if rt.reopened != nil && req.Header.Get(sessionHeader) != "" && rt.streams.Add(1) > 1 && req.Header.Get("Last-Event-ID") == "" {
				rt.reopened()
			}
			return resp, nil
		}
	}
	raw := resp.Body
	if a != nil && a.budget != nil && sse && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		// A tools/call's event stream: its answer is capped, and the other
		// messages on it are bounded apart (callstream.go), so it needs no
		// capped body of its own.
		a.mu.Lock()
		a.rec.status = resp.StatusCode
		a.mu.Unlock()
		resp.Body = readCloser{meterStream(raw, a, rt.maxBytes), raw}
		return resp, nil
	}
	body := &capped{r: raw, left: rt.maxBytes}
	resp.Body = readCloser{body, raw}
	if a == nil {
		return resp, nil
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		// The client follows it with a new request: let that one record.
		a.mu.Lock()
		a.rec.redirected = true
		a.mu.Unlock()
		a.claimed.Store(false)
		return resp, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec.status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Keep the start of the body for a message, and give the SDK the
		// body back from its start: it looks for a JSON-RPC error in it.
		// Past the limit its read fails, but tooLarge stays unset: the
		// status says what happened, and no result came that was too large.
		head, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
		a.rec.header, a.rec.body = resp.Header.Clone(), head
		a.rec.session, a.rec.id = req.Header.Get(sessionHeader) != "", requestID(req)
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), body), raw}
		return resp, nil
	}
	body.over = func() {
		a.mu.Lock()
		a.rec.tooLarge = true
		a.mu.Unlock()
	}
	return resp, nil
}

// errSwitchedProtocols is a server's answer of 101 Switching Protocols.
var errSwitchedProtocols = errors.New("mcp: the server switched protocols (HTTP 101), which MCP never does")

// sessionHeader is the MCP session's header, in http.Header's canonical
// form.
const sessionHeader = "Mcp-Session-Id"

// checkSession reports to rt.replaced a response that names a session other
// than the one req carried, and removes the header. The first response of a
// session (to initialize, which carries none) names it: that is no change.
func (rt *roundTripper) checkSession(req *http.Request, resp *http.Response) {
	got := resp.Header[sessionHeader]
	if len(got) == 0 {
		return
	}
	if sent := req.Header[sessionHeader]; len(sent) > 0 && got[0] != sent[0] {
		delete(resp.Header, sessionHeader)
		rt.replaced()
	}
}

// requestID is the JSON-RPC ID of the message req posted, or nil. It reads
// the body again from GetBody, which both of our senders' requests have,
// member by member: both write the ID before the params, which may be long.
func requestID(req *http.Request) json.RawMessage {
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	dec := json.NewDecoder(io.LimitReader(body, maxErrorBody))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if key == "id" {
			return value
		}
	}
	return nil
}

// ungzip undoes a gzip content coding the base transport left in place.
// net/http's undoes the gzip it asked for itself, and removes the header;
// the fast path's own transport asks for none, but a server may choose one
// when a request names none (RFC 9110 12.5.3), and some behind compressing
// proxies do. The cap that follows then counts decompressed bytes, so a
// small body cannot expand past MaxResponseBytes, and error bodies, event
// streams and their resumptions read alike on both paths. Another coding
// stays, and its body fails to read as JSON or events.
func ungzip(resp *http.Response) {
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "gzip", "x-gzip":
		resp.Body = readCloser{&gunzip{src: resp.Body}, resp.Body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
}

// gunzip reads a gzip stream, its header on the first Read (so that a
// response is handed over without waiting for its body).
type gunzip struct {
	src io.Reader
	zr  *gzip.Reader
	err error
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.src)
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.zr.Read(p)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// releaser is a response body that can read its rest without the caller
// waiting (h1Body.release): an *h1Body, under whatever wraps it.
type releaser interface {
	release(d time.Duration) bool
}

func (r readCloser) release(d time.Duration) bool {
	b, ok := r.Closer.(releaser)
	return ok && b.release(d)
}

// errTooLarge ends a response body that exceeds MaxResponseBytes.
var errTooLarge = errors.New("mcp: response exceeds the size limit")

// capped fails a read once more than left bytes came, calling over (if
// set) the first time.
type capped struct {
	r    io.Reader
	left int64
	over func()
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if c.left -= int64(n); c.left < 0 {
		if c.over != nil {
			c.over()
		}
		return 0, errTooLarge
	}
	return n, err
}
