package httpserver

import (
	"io"
	"net/http"
	"time"
)

// body is a request's body as the handler sees it: it sends 100 Continue
// on the first read when the client waits for one, and Close only stops
// further reads (the server drains what is left, within maxDrain).
type body struct {
	r            io.ReadCloser
	w            *response
	mustContinue bool  // the client sent Expect: 100-continue; nothing answered yet
	left         int64 // how much of a body of known length is still to come; -1: unknown
	sawEOF       bool
	closed       bool
	err          error // a read error other than EOF: the connection is spent
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.sawEOF {
		return 0, io.EOF
	}
	if b.mustContinue {
		b.mustContinue = false
		if !b.w.wroteHeader {
			b.w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := b.w.c.bw.Flush(); err != nil {
				b.err = err
				return 0, err
			}
		}
	}
	n, err := b.r.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF:
		b.sawEOF = true
	case err != nil:
		b.err = err
	}
	return n, err
}

func (b *body) Close() error {
	b.closed = true
	return nil
}

// drain reads what the handler left of the body, and reports whether the
// connection is still at a request boundary.
func (b *body) drain() bool {
	switch {
	case b.sawEOF:
		return true
	case b.err != nil, b.mustContinue:
		// A broken read, or a client still waiting for 100 Continue before
		// sending a body nobody wants.
		return false
	case b.left > maxDrain:
		// More is announced than is worth reading: answer now and close,
		// rather than wait for a body that may be slow or never come.
		return false
	}
	if b.left < 0 || b.left > int64(b.w.c.br.Buffered()) {
		b.w.c.setReadDeadline(time.Now().Add(min(drainWait, b.w.c.srv.opts.BodyTimeout)))
	}
	n, err := io.CopyN(io.Discard, b.r, maxDrain+1)
	return n <= maxDrain && err == io.EOF
}
