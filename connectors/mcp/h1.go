package mcp

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/nowait"
)

// h1Transport is the HTTP/1.1 round tripper of the tools/call fast path. It
// writes each request and reads its response on the caller's goroutine, over
// a pooled connection. net/http's Transport hands every request to a writer
// goroutine and every response back from a reader goroutine; on a proxy that
// is two or three goroutine switches per call, and on an idle replica as
// many thread wakeups, which cost more than the rest of the call.
//
// It speaks HTTP/1.1 only (over TLS too, by ALPN), keeps at most maxIdle
// idle connections per origin for idleTimeout, and before reusing one checks
// that the server has not closed it meanwhile (a non-blocking peek), so a
// request is not written into a connection already gone. A connection whose
// response body was not read to its end, or that either side marked
// Connection: close, is closed rather than reused. A server closes an idle
// connection when its own keep-alive timeout runs out, and a request
// written into it as it closes can run with its answer lost, an unknown
// outcome; the peek sees only a close that has already arrived. So a
// connection idle nearly as long as its server keeps one is closed
// instead: as long as the server said (Keep-Alive: timeout=N, which Node
// sends on a JSON answer), less a margin (keepAliveFor), else reuseUnsaid,
// which is under the 5 s that Node (on its event streams too) and uvicorn
// keep one by default, and under what was seen of a server that keeps one
// for less without saying so (idleBounds, h1learn.go). The caller's context
// aborts the dial, the exchange and the reading of the body.
type h1Transport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	tlsConfig   *tls.Config // nil: the system's roots
	idleTimeout time.Duration
	maxIdle     int

	mu     sync.Mutex
	idle   map[string][]*h1Conn // by scheme://host:port
	closed bool

	closes idleBounds // how long servers that do not say keep a connection
}

type h1Conn struct {
	conn  net.Conn
	sock  *nowait.Socket // the TCP socket under any TLS; nil when it cannot be looked at
	src   source         // under br
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
	// reuseFor is how long it may stay idle and still be reused: by the
	// server's last Keep-Alive timeout, else reuseUnsaid.
	reuseFor time.Duration
	// reusedAfter is how long it idled before the exchange it is in; 0
	// for a new connection.
	reusedAfter time.Duration
}

// reuseUnsaid is how long a connection whose server did not say how long
// it keeps one may idle and still be reused: what every other client of
// Quiver's keeps one for (egress.DefaultIdleTimeout, under the 5 s of
// Node's and uvicorn's defaults, as Node's own client, undici, keeps one).
const reuseUnsaid = egress.DefaultIdleTimeout

func newH1Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config) *h1Transport {
	return &h1Transport{dial: dial, tlsConfig: tlsConfig, idleTimeout: 30 * time.Second, maxIdle: 64, idle: map[string][]*h1Conn{}}
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		closeBody(req)
		return nil, fmt.Errorf("mcp: unsupported scheme %q", req.URL.Scheme)
	}
	ctx := req.Context()
	addr := net.JoinHostPort(req.URL.Hostname(), port(req.URL))
	key := req.URL.Scheme + "://" + addr
	pc := t.get(key)
	if pc == nil {
		var err error
		if pc, err = t.connect(ctx, req.URL.Scheme, addr, req.URL.Hostname(), key); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	stop := context.AfterFunc(ctx, func() {
		pc.src.cut.Store(true) // before the deadline: source keeps it
		pc.conn.SetDeadline(time.Unix(1, 0))
	})
	fail := func(err error) (*http.Response, error) {
		stop()
		if pc.reusedAfter > 0 && ctx.Err() == nil {
			// Closed by the server after idling that long, as a rule
			// (idleBounds).
			t.closes.saw(key, pc.reusedAfter, time.Now())
		}
		pc.conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	wrote, err := writeRequest(pc.bw, req)
	if !wrote {
		err = req.Write(pc.bw)
	}
	if err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	// Once a head is left to http.ReadResponse, the rest of the exchange is
	// read through long, and the connection is not used again.
	var long *longHeads
	for {
		var resp *http.Response
		var err error
		if long == nil {
			if resp, err = readResponse(pc.br, req); resp == nil && err == nil {
				long = newLongHeads(pc.br)
			}
		}
		if long != nil {
			resp, err = long.read(req)
		}
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim response (103 Early Hints): the answer follows
		}
		reuse := long == nil && !resp.Close && !req.Close
		if ka, ok := keepAliveFor(resp.Header); ok {
			pc.reuseFor, reuse = ka, reuse && ka > 0
		}
		resp.Body = &h1Body{body: resp.Body, t: t, pc: pc, stop: stop, reuse: reuse}
		return resp, nil
	}
}

// connect dials a new connection to addr (host:port) of the named host.
func (t *h1Transport) connect(ctx context.Context, scheme, addr, host, key string) (*h1Conn, error) {
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	sock := nowait.New(conn) // before TLS wraps it
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.tlsConfig != nil {
			cfg = t.tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			// Nothing of the request was sent: a failure to connect.
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: conn.RemoteAddr(), Err: err}
		}
		conn = tc
	}
	pc := &h1Conn{conn: conn, sock: sock, bw: bufio.NewWriterSize(conn, 8<<10), key: key, reuseFor: reuseUnsaid}
	pc.src = source{conn: conn}
	if scheme == "http" {
		pc.src.sock = sock // over TLS the socket's bytes are not the response's
	}
	pc.br = bufio.NewReaderSize(&pc.src, 16<<10)
	return pc, nil
}

// source is a connection as its bufio.Reader reads it. Under a bound (set
// by h1Body.release), the first read that would have to wait for the
// server sets the connection's read deadline first; what the socket already
// holds is read with none. A deadline modifies a runtime timer, and the
// runtime wakes a thread to watch a timer so modified: for a stream's end
// that has arrived with the answer, that would be a wakeup for nothing.
type source struct {
	conn  net.Conn
	sock  *nowait.Socket
	bound time.Duration
	armed bool        // the bound's deadline is set
	cut   atomic.Bool // the exchange's context ended: its past deadline stays
}

func (s *source) Read(p []byte) (int, error) {
	if s.bound > 0 && !s.armed {
		if n := s.sock.Read(p); n > 0 {
			return n, nil
		}
		s.conn.SetReadDeadline(time.Now().Add(s.bound))
		if s.cut.Load() {
			// The context ended (before or while arming): its past
			// deadline, not the bound, ends the read.
			s.conn.SetReadDeadline(time.Unix(1, 0))
		}
		s.armed = true
	}
	return s.conn.Read(p)
}

// unbind ends a bound, clearing the deadline it set.
func (s *source) unbind() {
	if s.armed {
		s.conn.SetReadDeadline(time.Time{})
	}
	s.bound, s.armed = 0, false
}

// get takes a live idle connection to key, or returns nil.
func (t *h1Transport) get(key string) *h1Conn {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil
		}
		pc := list[len(list)-1]
		t.idle[key] = list[:len(list)-1]
		t.mu.Unlock()
		idle := now.Sub(pc.since)
		reuseFor := pc.reuseFor
		if d, ok := t.closes.limit(key, now); ok {
			reuseFor = min(reuseFor, d)
		}
		if idle < t.idleTimeout && idle < reuseFor {
			if pc.br.Buffered() == 0 && pc.sock.Quiet() {
				pc.reusedAfter = idle
				return pc
			}
			// The server closed it (or spoke out of turn) while it idled.
			t.closes.saw(key, idle, now)
		}
		pc.conn.Close()
	}
}

// keepAliveFor reads a Keep-Alive header's timeout (seconds; RFC 2068,
// 19.7.1.1): how long a connection may idle and still be reused is that
// less a margin (lessMargin). A value may be quoted and spaced
// around its "=", and a header may come in several lines (a proxy's added
// to the server's): the shortest timeout counts, and one that is no number
// is skipped. ok is false when there is no timeout to read; a timeout of 0
// gives 0 with ok: do not reuse it.
func keepAliveFor(h http.Header) (d time.Duration, ok bool) {
	n := -1
	for _, v := range h.Values("Keep-Alive") {
		for v != "" {
			var param string
			param, v, _ = strings.Cut(v, ",")
			name, value, _ := strings.Cut(param, "=")
			if !strings.EqualFold(strings.TrimSpace(name), "timeout") {
				continue
			}
			s, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
			if err == nil && s >= 0 && (n < 0 || s < n) {
				n = s
			}
		}
	}
	if n < 0 {
		return 0, false
	}
	return lessMargin(time.Duration(min(n, 1<<20)) * time.Second), true
}

// put returns pc to the pool, or closes it.
func (t *h1Transport) put(pc *h1Conn) {
	pc.since = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle[pc.key]) >= t.maxIdle {
		t.mu.Unlock()
		pc.conn.Close()
		return
	}
	t.idle[pc.key] = append(t.idle[pc.key], pc)
	t.mu.Unlock()
}

// closeStale closes idle connections past idleTimeout (the pool's reaper
// calls it), so a tool no longer called keeps no sockets open.
func (t *h1Transport) closeStale() {
	cutoff := time.Now().Add(-t.idleTimeout)
	var stale []*h1Conn
	t.mu.Lock()
	for key, list := range t.idle {
		kept := list[:0]
		for _, pc := range list {
			if pc.since.Before(cutoff) {
				stale = append(stale, pc)
			} else {
				kept = append(kept, pc)
			}
		}
		if len(kept) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = kept
		}
	}
	t.mu.Unlock()
	for _, pc := range stale {
		pc.conn.Close()
	}
}

// CloseIdleConnections closes the pooled connections; later ones close when
// their response ends.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.conn.Close()
		}
	}
}

// close closes the pool for good.
func (t *h1Transport) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
}

// h1Body gives the connection back once the body was read to its end, and
// closes it if the body is closed before.
type h1Body struct {
	body  io.ReadCloser
	t     *h1Transport
	pc    *h1Conn
	stop  func() bool
	reuse bool

	mu       sync.Mutex
	done     bool
	released bool // release took the rest over: Close leaves it be
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.finish(true)
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.mu.Lock()
	released := b.released
	b.mu.Unlock()
	if !released {
		b.finish(false)
	}
	return nil
}

// maxDrain is how much of a body's rest release reads to keep its
// connection; a longer rest closes it.
const maxDrain = 1 << 20

// release ends the caller's part in the exchange without making it wait
// for the rest of the body: a rest that has begun to come (as a rule, all
// of it) is read at once, and one not yet on its way is read, for up to d,
// on a goroutine of its own; either gives the connection back to the pool
// if the body ends in time and closes it otherwise. The context no longer
// cuts the connection: d bounds the wait. An event stream's end comes after
// its answer, once the server's handler has returned: on a busy machine a
// hundred microseconds and more later, which the call's answer would
// otherwise wait out. Close after release does nothing.
func (b *h1Body) release(d time.Duration) bool {
	b.mu.Lock()
	if b.done || b.released {
		b.mu.Unlock()
		return true
	}
	if !b.stop() { // the context ended: its deadline is on the connection
		b.done = true
		b.mu.Unlock()
		b.pc.conn.Close()
		return true
	}
	b.released = true // and no longer tied to the context: finish knows
	b.pc.src.bound = d
	come := b.pc.br.Buffered() > 0 || !b.pc.sock.Quiet()
	b.mu.Unlock()
	if come {
		b.drain()
	} else {
		go b.drain()
	}
	return true
}

// drain reads the rest of a released body, then ends the exchange.
func (b *h1Body) drain() {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, maxDrain))
	b.finish(false) // a no-op once the end was read
}

// finish ends the exchange once: the connection goes back to the pool if
// the body ended cleanly and both sides allow it, and is closed otherwise.
func (b *h1Body) finish(eof bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	// The context ended (a deadline was set on the connection), unless
	// release had already stopped its watch.
	aborted := !b.released && !b.stop()
	if eof && b.reuse && !aborted {
		b.pc.src.unbind()
		b.t.put(b.pc)
		return
	}
	b.pc.conn.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// maxLongHead bounds a response head left to http.ReadResponse, which reads
// one of any length: 1 MiB, where net/http's Transport allows 10
// (MaxResponseHeaderBytes). A server that sends a head without end would
// otherwise fill memory until the call's deadline.
const maxLongHead = 1 << 20

// longHeads reads responses with http.ReadResponse, each head bounded by
// maxLongHead, through a buffer of its own over the connection's: what it
// has read ahead is not the connection's any more, which is then not
// used again.
type longHeads struct {
	lr *io.LimitedReader
	br *bufio.Reader
}

func newLongHeads(br *bufio.Reader) *longHeads {
	lr := &io.LimitedReader{R: br}
	return &longHeads{lr: lr, br: bufio.NewReader(lr)}
}

// read reads the next response's head, bounded, and leaves its body
// unbounded here (the caller caps bodies).
func (l *longHeads) read(req *http.Request) (*http.Response, error) {
	l.lr.N = maxLongHead
	resp, err := http.ReadResponse(l.br, req)
	if err != nil && l.lr.N <= 0 {
		err = fmt.Errorf("mcp: the server's response head is longer than %d bytes (%w)", maxLongHead, err)
	}
	l.lr.N = math.MaxInt64
	return resp, err
}
