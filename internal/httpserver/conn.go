package httpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/internal/nowait"
)

// A connection's states. Shutdown closes only idle ones (CAS idle → closed),
// and a connection takes a request only by CAS idle (or new) → active, so
// the two never both win. A new connection, accepted with its first
// request maybe on the way, is not Shutdown's to close: it is answered,
// or closed by ReadHeaderTimeout, as net/http gives one its first seconds.
const (
	stateIdle int32 = iota
	stateActive
	stateClosed
	stateNew
)

const (
	bufferSize = 4 << 10
	// bufferLimit is how much of a response is held to send it with a
	// Content-Length; past it the response is streamed, chunked.
	bufferLimit = 64 << 10
	// keepBuffer is the largest held-body buffer a connection keeps for its
	// next response; the usual answer fits, and thousands of idle
	// connections do not each pin up to bufferLimit.
	keepBuffer = 8 << 10
	// maxDrain is how much of a body the handler left unread is read and
	// dropped to keep the connection; past it the connection closes.
	maxDrain = 256 << 10
	// drainWait bounds how long the server waits for the rest of a body
	// the handler left unread: a client still sending it promptly keeps
	// its connection; a slow one gets its answer and the connection
	// closes, rather than wait out BodyTimeout for bytes nobody reads.
	drainWait = time.Second
)

type conn struct {
	srv    *Server
	rwc    net.Conn
	remote string
	ctx    context.Context
	state  atomic.Int32

	limit io.LimitedReader // under br: bounds the header block
	br    *bufio.Reader
	in    reader // under limit, under br
	w     writer // under bw
	bw    *bufio.Writer
	out   []byte    // a response's held body, reused across requests
	cur   *response // the response of the handler running, if one is

	served   int  // requests answered
	lastPost bool // the last request read was a POST
	unread   bool // given up on with input maybe still unread: close gently
	// idleUntil is the read deadline the last idle wait set, while no
	// other deadline has replaced it; zero otherwise.
	idleUntil time.Time
}

func newConn(s *Server, rwc net.Conn) *conn {
	c := &conn{srv: s, rwc: rwc, remote: rwc.RemoteAddr().String()}
	c.state.Store(stateNew)
	c.ctx = context.WithValue(context.Background(), http.LocalAddrContextKey, rwc.LocalAddr())
	c.in = reader{r: rwc}
	c.limit = io.LimitedReader{R: &c.in, N: math.MaxInt64}
	c.br = bufio.NewReaderSize(&c.limit, bufferSize)
	c.w = newWriter(rwc, s.opts.WriteTimeout)
	c.bw = bufio.NewWriterSize(&c.w, bufferSize)
	return c
}

// reader is the connection as the server reads it, keeping its last
// error: bufio's ReadLine hands a line cut by a timeout or a close over
// as if whole, and http.ReadRequest then calls it malformed. It counts its
// reads, and copies them while a request head that arrives in pieces is
// read (see readRequest).
type reader struct {
	r         io.Reader
	err       error
	reads     int
	recording bool
	rec       []byte
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.reads++
	if r.recording {
		r.rec = append(r.rec, p[:n]...)
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

// record starts the copy with what br holds, the start of a request.
func (r *reader) record(br *bufio.Reader) {
	b, _ := br.Peek(br.Buffered())
	r.rec = append(r.rec[:0], b...)
	r.recording = true
}

// recorded ends the copy and returns it; it is valid until the next.
func (r *reader) recorded() []byte {
	r.recording = false
	b := r.rec
	if cap(r.rec) > keepBuffer {
		r.rec = nil // a large head is rare: idle connections do not keep its copy
	}
	return b
}

// writer is the connection as the server writes to it: a client must take
// each piece of an answer (at most writeChunk bytes) within timeout of
// when the piece first had to wait. What the socket takes at once (the
// usual answer, whole) needs no deadline: the write deadline is set only
// when a write would wait, and cleared after. Setting a deadline modifies
// a runtime timer, and the runtime wakes a thread to watch a timer so
// modified; once per answer, that was a thread wakeup per call.
type writer struct {
	conn    net.Conn
	timeout time.Duration
	sock    *nowait.Socket // nil: every piece is written under a deadline
}

// writeChunk is how much of an answer each write deadline covers.
const writeChunk = 64 << 10

func newWriter(conn net.Conn, timeout time.Duration) writer {
	return writer{conn: conn, timeout: timeout, sock: nowait.New(conn)}
}

func (w *writer) Write(p []byte) (n int, err error) {
	for len(p) > 0 && err == nil {
		piece := p[:min(len(p), writeChunk)]
		m := w.sock.Write(piece)
		if m < len(piece) {
			w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
			var k int
			k, err = w.conn.Write(piece[m:])
			m += k
			// A deadline left behind would fail the next piece once
			// past, even one written at once.
			w.conn.SetWriteDeadline(time.Time{})
		}
		n += m
		p = p[m:]
	}
	return n, err
}

// serve answers requests on the connection until it closes, fails, stops
// keeping alive or the server shuts down.
func (c *conn) serve() {
	defer c.close()
	defer func() {
		if v := recover(); v != nil {
			c.unread = true
			if c.cur != nil && !c.cur.sent {
				c.bw.Reset(&c.w) // a header block cut short: send none of it, as net/http
			}
			if v != http.ErrAbortHandler {
				c.srv.opts.Logger.Error("http: handler panicked", "remote", c.remote, "panic", v, "stack", string(debug.Stack()))
			}
		}
	}()
	for {
		req, err := c.readRequest()
		if err != nil {
			var refusal *Refusal
			if errors.As(err, &refusal) {
				c.unread = true
				c.refuse(refusal)
			}
			return
		}
		if !c.serveRequest(req) {
			return
		}
		c.served++
		if c.srv.inShutdown.Load() || !c.state.CompareAndSwap(stateActive, stateIdle) {
			return
		}
	}
}

func (c *conn) close() {
	c.state.Store(stateClosed)
	if c.unread {
		c.closeGently()
	}
	c.rwc.Close()
	c.srv.trackConn(c, false)
}

// lingerTime bounds how long a connection closed with input unread waits
// for the client to read its answer and close its side.
const lingerTime = 500 * time.Millisecond

// closeGently ends a connection the server gave up on while the client may
// still be sending (a refused request, a body too large to drain): a socket
// closed with data unread sends a reset, and a client still writing then
// sees "connection reset" instead of the answer waiting for it. So the
// server closes its side for writing and reads (and drops) what still
// comes, until the client closes or lingerTime passes, as net/http does.
func (c *conn) closeGently() {
	c.bw.Flush()
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.setReadDeadline(time.Now().Add(lingerTime))
	io.Copy(io.Discard, c.rwc)
}

// Refusal is a request the server answers itself, then closes the
// connection.
type Refusal struct {
	Status  int
	Message string
	// Header names the request header field that was malformed, when one
	// was ("Idempotency-Key"); its value is never repeated.
	Header string
}

func (r *Refusal) Error() string { return r.Message }

func refuse(status int, format string, args ...any) error {
	return &Refusal{Status: status, Message: fmt.Sprintf(format, args...)}
}

// setReadDeadline sets the connection's read deadline for anything but
// the wait for a next request.
func (c *conn) setReadDeadline(t time.Time) {
	c.idleUntil = time.Time{}
	c.rwc.SetReadDeadline(t)
}

// awaitIdle bounds the wait for a next request by IdleTimeout from now,
// or by the idle deadline already set if that is at most an eighth
// earlier: moving a deadline modifies a runtime timer, which wakes a
// thread to watch it, and after every answer that was a wakeup per call.
func (c *conn) awaitIdle() {
	idle := c.srv.opts.IdleTimeout
	want := time.Now().Add(idle)
	if !c.idleUntil.IsZero() && want.Sub(c.idleUntil) <= idle/8 {
		return
	}
	c.rwc.SetReadDeadline(want)
	c.idleUntil = want
}

// readRequest waits for the next request and reads its line and headers.
// A connection closed, idle for too long or cut mid-request gets no answer.
func (c *conn) readRequest() (*http.Request, error) {
	opts := &c.srv.opts
	// After a POST, up to four CR or LF bytes are dropped: an old client's
	// CRLF after the body (RFC 9112 2.2), as net/http drops them.
	skip := 0
	if c.lastPost {
		skip = 4
	}
	for {
		if c.br.Buffered() == 0 {
			if c.served == 0 {
				c.setReadDeadline(time.Now().Add(opts.ReadHeaderTimeout)) // a new connection owes its request
			} else {
				c.awaitIdle()
			}
			if _, err := c.br.Peek(1); err != nil {
				return nil, err
			}
		}
		if skip == 0 {
			break
		}
		b, _ := c.br.Peek(min(skip, c.br.Buffered()))
		n := 0
		for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
			n++
		}
		c.br.Discard(n)
		if skip -= n; n < len(b) {
			break
		}
	}
	if !c.state.CompareAndSwap(stateIdle, stateActive) && !c.state.CompareAndSwap(stateNew, stateActive) {
		return nil, net.ErrClosed // shut down while idle
	}
	// A deadline is set only for what may have to be waited for: each
	// modifies a runtime timer, which wakes a thread to watch it. A small
	// request arrives whole, so reading it never waits, and the idle
	// deadline stays.
	//
	// check and suspectFraming may need the raw head (request.go). One
	// held whole stays where it is in br's buffer while http.ReadRequest
	// reads it: bufio moves what it holds only to read more, and a head
	// held whole needs no more (reads tells, if that ever changes). One
	// that arrives in pieces is copied as it is read.
	head := bufferedHead(c.br)
	if head == nil {
		if c.served > 0 {
			// A connection's first head is due from the accept (the
			// deadline set above), not from its first byte: one that
			// trickles it gets no second ReadHeaderTimeout.
			c.setReadDeadline(time.Now().Add(opts.ReadHeaderTimeout))
		}
		c.in.record(c.br)
	}
	reads := c.in.reads
	c.limit.N = int64(opts.MaxHeaderBytes) + bufferSize
	c.in.err = nil
	req, err := http.ReadRequest(c.br)
	exhausted := c.limit.N <= 0
	c.limit.N = math.MaxInt64
	switch {
	case c.in.recording:
		head = c.in.recorded()
	case c.in.reads != reads:
		head = nil // moved: not known
	}
	if err != nil {
		var target *url.Error
		switch {
		case exhausted && head != nil && bytes.IndexByte(head, '\n') < 0:
			// Not even the request line fits: its target is too long
			// (RFC 9112 3), not its header fields.
			return nil, refuse(http.StatusRequestURITooLong, "The request line exceeds %d bytes.", opts.MaxHeaderBytes)
		case exhausted:
			return nil, refuse(http.StatusRequestHeaderFieldsTooLarge, "The request's line and headers exceed %d bytes.", opts.MaxHeaderBytes)
		case errors.As(err, &target):
			// A request-target that does not parse (a bad escape, no leading
			// slash). *url.Error has Timeout and Temporary, so it must be
			// told apart before the read errors below, which it would pass
			// for. Only its cause is quoted: the target may carry a
			// credential in its query.
			return nil, refuse(http.StatusBadRequest, "The request's target is malformed: %v.", target.Err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isNetError(err):
			return nil, err
		case c.in.err != nil:
			// The head was cut short (a stall past the deadline, a
			// close), not malformed: nothing to answer.
			return nil, c.in.err
		}
		return nil, parseRefusal(err, head)
	}
	if req.Body != http.NoBody && (req.ContentLength < 0 || int64(c.br.Buffered()) < req.ContentLength) {
		c.setReadDeadline(time.Now().Add(opts.BodyTimeout))
	} // else nothing reads the connection before the next request's deadline
	if err := check(req, head); err != nil {
		return nil, err
	}
	c.lastPost = req.Method == http.MethodPost
	if suspectFraming(req, head) {
		req.Close = true
		c.unread = true // what follows is not read: close gently
	}
	req.RemoteAddr = c.remote
	return req.WithContext(c.ctx), nil
}

// serveRequest runs the handler and sends its response; it reports whether
// the connection can take another request.
func (c *conn) serveRequest(req *http.Request) bool {
	w := newResponse(c, req)
	if req.Body != http.NoBody {
		b := &body{r: req.Body, w: w, left: req.ContentLength}
		if _, ok := req.Header["Expect"]; ok {
			delete(req.Header, "Expect")
			b.mustContinue = req.ProtoAtLeast(1, 1)
		}
		w.body = b
		req.Body = b
	}
	c.cur = w
	c.srv.handler.ServeHTTP(w, req)
	c.cur = nil
	if b := w.body; b != nil {
		b.closed = true
		// A body answered 413 is not read on (RFC 9110 15.5.14): reading
		// what was just refused as too large, or waiting for it, is what
		// the limit was to spare. net/http stops so too, told by its
		// MaxBytesReader, which cannot tell this server.
		tooLarge := w.status == http.StatusRequestEntityTooLarge && !b.sawEOF
		if tooLarge || !b.drain() {
			w.closeAfter = true
			c.unread = true
		}
	}
	if err := w.finish(); err != nil {
		return false
	}
	return !w.closeAfter
}

// refuse answers a request the server will not hand to the handler, and the
// connection then closes.
func (c *conn) refuse(r *Refusal) {
	ctype, body := c.srv.opts.ErrorBody(*r)
	c.w.timeout = time.Second // a refusal is small; the connection closes after it
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n",
		r.Status, http.StatusText(r.Status), ctype, len(body))
	if c.srv.opts.OnRefusal != nil {
		for k, vs := range c.srv.opts.OnRefusal(*r) {
			for _, v := range vs {
				if httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v) {
					fmt.Fprintf(c.bw, "%s: %s\r\n", k, v)
				}
			}
		}
	}
	c.bw.WriteString("\r\n")
	c.bw.Write(body)
	c.bw.Flush()
}

// writeErr is the writer's sticky error, if a write to the client failed.
func (c *conn) writeErr() error {
	_, err := c.bw.Write(nil)
	return err
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}
