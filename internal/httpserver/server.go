// Package httpserver serves HTTP/1.1 to an http.Handler: Quiver's API
// listener. It owns connections, request framing and graceful shutdown; it
// never looks at what a request means.
//
// Why not net/http's server: it watches every connection while a handler
// runs with a goroutine started per request, and stops it when the handler
// returns — a goroutine start, a deadline change that wakes it and a
// condition-variable handshake on every request, each waking an idle
// processor of the Go scheduler. For a proxy whose own work per call is tens
// of microseconds those wake-ups were the largest part of Quiver's CPU per
// call and ~0.15 ms of its latency (BenchmarkMCPReadCount; README,
// Performance). Here each connection is read by one goroutine that also runs
// the handler, so a request adds no goroutine hand-off of its own:
//
//	accept ─▶ conn goroutine: [idle: wait for a byte] ─▶ read request ─▶ handler ─▶ write response ─┐
//	                 ▲                                                                            │
//	                 └──────────────────────── keep-alive ─────────────────────────────────────────┘
//
// Parsing is net/http's (http.ReadRequest), plus the checks net/http's
// server adds: the Host header (RFC 9112 3.2: with an absolute-form target
// too), header names and values, the size of the header block, Expect;
// and, stricter than net/http where RFC 9112 asks, the framing a request
// smuggled past a front proxy would use (request.go): a body framed by both
// Transfer-Encoding and Content-Length, or by a Transfer-Encoding in
// HTTP/1.0, is answered and the connection then closes; a Transfer-Encoding
// not ending in chunked gets 400, another coding before chunked 501, and
// a Content-Length or Transfer-Encoding folded over lines 400.
//
// A response is held until the handler returns and goes out in one write
// with a Content-Length; one that grows past bufferLimit or is flushed is
// streamed, chunked.
//
// Not supported, on purpose: HTTP/2, TLS (terminate it in front), Hijack,
// response trailers, and cancelling a request's context when its client
// goes away — every Quiver handler is bounded by its own timeouts, and a
// dispatched tool call has to outlive its client anyway.
package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options' zero values.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultBodyTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxHeaderBytes    = 1 << 20
)

// Options tune a Server; nil or zero fields take the defaults.
type Options struct {
	// ReadHeaderTimeout bounds reading a request's line and headers: from
	// its first byte, or from the accept for a connection's first request.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends nothing for
	// this long after an answer, or for up to an eighth less (the deadline
	// is not moved for every answer).
	IdleTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers, so a client trickling a body cannot hold a connection (and
	// a handler) forever. A read past it fails and the connection closes.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long the client may take to accept each
	// piece of an answer (up to 64 KiB) the server writes, so a client
	// that stops reading cannot hold its connection, its handler and a
	// graceful stop forever. A write past it fails and the connection
	// closes. It bounds each piece, not the whole answer: a long stream,
	// or a large body read at 64 KiB per WriteTimeout or faster (beyond
	// what the socket buffers hold), goes through.
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; more gets 431.
	MaxHeaderBytes int
	// ErrorBody renders the body of a request the server refuses before any
	// handler runs (400, 414, 417, 431, 501, 505). Nil gives text/plain.
	ErrorBody func(r Refusal) (contentType string, body []byte)
	// OnRefusal, if set, is called for each refusal, which no handler
	// sees (to log and count it), and gives header fields to add to it
	// (say, a request ID, which every other answer carries).
	OnRefusal func(r Refusal) http.Header
	// Logger gets handler panics and accept errors. Nil discards them.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.ReadHeaderTimeout <= 0 {
		out.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if out.IdleTimeout <= 0 {
		out.IdleTimeout = DefaultIdleTimeout
	}
	if out.BodyTimeout <= 0 {
		out.BodyTimeout = DefaultBodyTimeout
	}
	if out.WriteTimeout <= 0 {
		out.WriteTimeout = DefaultWriteTimeout
	}
	if out.MaxHeaderBytes <= 0 {
		out.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if out.ErrorBody == nil {
		out.ErrorBody = func(r Refusal) (string, []byte) {
			return "text/plain; charset=utf-8", []byte(r.Message)
		}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// Server serves HTTP/1.1 connections to one handler.
type Server struct {
	handler http.Handler
	opts    Options

	inShutdown atomic.Bool
	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}

	// closing makes every answer from then on end its connection
	// (Connection: close): set by CloseAfterEachAnswer, Shutdown and
	// Close. An answer loads it in place of inShutdown, so it costs the
	// call path nothing more.
	closing atomic.Bool
}

// New returns a server for handler; opts may be nil.
func New(handler http.Handler, opts *Options) *Server {
	return &Server{
		handler:   handler,
		opts:      opts.withDefaults(),
		listeners: make(map[*net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
	}
}

// Serve accepts connections on ln until Shutdown or Close, and then returns
// http.ErrServerClosed. Other accept errors (a full file table, an aborted
// connection) are logged and retried with a growing pause, as net/http does.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(&ln, true) {
		return http.ErrServerClosed
	}
	defer s.track(&ln, false)
	var pause time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.opts.Logger.Warn("http: accept failed; retrying", "error", err, "pause", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		c := newConn(s, rwc)
		if !s.trackConn(c, true) {
			rwc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

// CloseAfterEachAnswer makes every answer from now on end its connection
// with Connection: close, while the server goes on accepting and serving
// new ones: a stopping replica's clients then reconnect, through a load
// balancer that, once it sees the replica not ready, sends them elsewhere.
// Unlike net/http's SetKeepAlivesEnabled(false) it closes no idle
// connection: that would race a request the client may be sending on it,
// which the client could not tell from one lost after it was read. An idle
// connection used again gets one answer and closes; one never used again
// is Shutdown's to close.
func (s *Server) CloseAfterEachAnswer() { s.closing.Store(true) }

// Shutdown stops accepting, closes idle connections and waits until the
// requests in flight have been answered (their connections then close), or
// until ctx ends, whose error it then returns. A connection accepted but
// not yet read is not idle: its first request may be on the way, and is
// answered; one that sends none closes after ReadHeaderTimeout.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.inShutdown.Store(true)
	err := s.closeListeners()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.closeIdle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return err
}

// Close stops accepting and closes every connection, busy or not.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.inShutdown.Store(true)
	err := s.closeListeners()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.state.Store(stateClosed)
		c.rwc.Close()
	}
	return err
}

// track adds or removes a listener; it refuses to add once shut down.
func (s *Server) track(ln *net.Listener, add bool) bool { return track(s, s.listeners, ln, add) }

// trackConn adds or removes a connection; it refuses to add once shut down.
func (s *Server) trackConn(c *conn, add bool) bool { return track(s, s.conns, c, add) }

func track[K comparable](s *Server, set map[K]struct{}, k K, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(set, k)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	set[k] = struct{}{}
	return true
}

func (s *Server) closeListeners() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for ln := range s.listeners {
		if cerr := (*ln).Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// closeIdle closes the connections waiting for a request and reports
// whether none are left. A connection answering a request closes itself
// when it sees the shutdown.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.rwc.Close()
		}
	}
	return len(s.conns) == 0
}
