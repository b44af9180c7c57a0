package httpserver

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the http.ResponseWriter of one request. The status line and
// the handler's headers go to the connection's writer when the status is
// fixed (WriteHeader, or the first Write), so later header changes have no
// effect, as in net/http. The framing headers (Content-Length or
// Transfer-Encoding, Connection, and Date and Content-Type when the handler
// set none) follow when the body is known: when the handler returns, or
// when it flushes or outgrows bufferLimit.
type response struct {
	c    *conn
	req  *http.Request
	body *body // nil when the request has none

	header      http.Header
	status      int
	wroteHeader bool  // status and handler headers written
	sent        bool  // header block complete; body bytes go straight out
	finished    bool  // the handler returned
	chunked     bool  // streaming with chunked framing
	declared    int64 // the handler's Content-Length, or -1
	written     int64 // body bytes the handler wrote
	buf         []byte
	dateSet     bool
	ctypeSet    bool // Content-Type set (or Content-Encoding): sniff none
	closeAfter  bool
}

func newResponse(c *conn, req *http.Request) *response {
	return &response{c: c, req: req, header: make(http.Header), declared: -1, buf: c.out[:0]}
}

// newlineToSpace keeps a header value on its line, as net/http does.
var newlineToSpace = strings.NewReplacer("\r", " ", "\n", " ")

var errFinished = errors.New("httpserver: write after the handler returned")

func (w *response) Header() http.Header { return w.header }

// WriteHeader fixes the status and writes the handler's headers. 1xx
// statuses other than 101 go out at once as interim responses.
func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("httpserver: invalid WriteHeader code %v", code))
	}
	if w.wroteHeader || w.finished {
		return
	}
	bw := w.c.bw
	interim := code < 200 && code != http.StatusSwitchingProtocols
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	bw.WriteString(" ")
	bw.WriteString(http.StatusText(code))
	bw.WriteString("\r\n")
	for k, vs := range w.header {
		switch k {
		case "Content-Length":
			if !interim && len(vs) == 1 {
				if n, err := strconv.ParseInt(vs[0], 10, 64); err == nil && n >= 0 {
					w.declared = n
				}
			}
			continue
		case "Transfer-Encoding":
			continue
		case "Connection":
			if !interim && httpguts.HeaderValuesContainsToken(vs, "close") {
				w.closeAfter = true
			}
			continue
		case "Date":
			w.dateSet = true
		case "Content-Type":
			w.ctypeSet = true // set but empty: send none, sniff none
		case "Content-Encoding":
			if len(vs) > 0 && vs[0] != "" {
				w.ctypeSet = true // encoded bytes say nothing of their type
			}
		}
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(newlineToSpace.Replace(v))
			bw.WriteString("\r\n")
		}
	}
	if interim {
		bw.WriteString("\r\n")
		bw.Flush()
		w.dateSet, w.ctypeSet, w.declared = false, false, -1
		return
	}
	w.wroteHeader = true
	w.status = code
}

func (w *response) Write(p []byte) (int, error) {
	if err := w.startBody(len(p)); err != nil {
		return 0, err
	}
	return w.write(p)
}

func (w *response) startBody(n int) error {
	if w.finished {
		return errFinished
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return nil // as net/http: an empty write is fine even where no body is
	}
	if !bodyAllowed(w.status) {
		return http.ErrBodyNotAllowed
	}
	if w.declared >= 0 && w.written+int64(n) > w.declared {
		return http.ErrContentLength
	}
	w.written += int64(n)
	return nil
}

// write holds p while it fits in bufferLimit, and otherwise sends the
// header block and streams.
func (w *response) write(p []byte) (int, error) {
	if w.req.Method == http.MethodHead {
		if len(w.buf) < sniffLen {
			w.buf = append(w.buf, p...)
		}
		return len(p), nil
	}
	if !w.sent && len(w.buf)+len(p) <= bufferLimit {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if !w.sent {
		if err := w.send(false, p); err != nil {
			return 0, err
		}
	}
	if err := w.writeWire(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends what the handler wrote so far; the response is then streamed.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController.
func (w *response) FlushError() error {
	if w.finished {
		return errFinished
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		if err := w.send(false, nil); err != nil {
			return err
		}
	}
	return w.c.bw.Flush()
}

// sniffLen is how much of a body http.DetectContentType looks at.
const sniffLen = 512

// send completes the header block and writes the held body. final says the
// handler has returned, so the held body is all of it; first is the write
// about to follow the held body, to sniff a Content-Type from if none is
// held.
func (w *response) send(final bool, first []byte) error {
	bw := w.c.bw
	if !w.dateSet {
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(bw.AvailableBuffer(), http.TimeFormat))
		bw.WriteString("\r\n")
	}
	hasBody := bodyAllowed(w.status)
	sniff := w.buf
	if len(sniff) == 0 {
		sniff = first
	}
	if !w.ctypeSet && hasBody && len(sniff) > 0 {
		bw.WriteString("Content-Type: ")
		bw.WriteString(http.DetectContentType(sniff))
		bw.WriteString("\r\n")
	}
	switch {
	case !hasBody:
	case w.declared >= 0:
		writeLength(bw, w.declared)
	case w.req.Method == http.MethodHead:
		if final && w.written > 0 {
			writeLength(bw, w.written)
		}
	case final:
		writeLength(bw, int64(len(w.buf)))
	case w.req.ProtoAtLeast(1, 1):
		bw.WriteString("Transfer-Encoding: chunked\r\n")
		w.chunked = true
	default:
		w.closeAfter = true // HTTP/1.0 without a length: the body ends with the connection
	}
	if w.req.Close || w.c.srv.closing.Load() {
		w.closeAfter = true
	}
	switch {
	case w.closeAfter:
		bw.WriteString("Connection: close\r\n")
	case !w.req.ProtoAtLeast(1, 1):
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	w.sent = true
	if len(w.buf) > 0 && hasBody && w.req.Method != http.MethodHead {
		if err := w.writeWire(w.buf); err != nil {
			return err
		}
	}
	w.buf = w.buf[:0]
	return nil
}

func writeLength(bw *bufio.Writer, n int64) {
	bw.WriteString("Content-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, 10))
	bw.WriteString("\r\n")
}

// writeWire writes body bytes after the header block, framed as chunks
// when streaming chunked.
func (w *response) writeWire(p []byte) error {
	bw := w.c.bw
	if len(p) == 0 {
		return nil
	}
	if w.chunked {
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	bw.Write(p)
	if w.chunked {
		bw.WriteString("\r\n")
	}
	return w.c.writeErr()
}

// finish completes the response after the handler returned and flushes it.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		if err := w.send(true, nil); err != nil {
			return err
		}
	} else if w.chunked {
		w.c.bw.WriteString("0\r\n\r\n")
	}
	if w.declared >= 0 && w.written != w.declared && bodyAllowed(w.status) && w.req.Method != http.MethodHead {
		w.closeAfter = true // a short body leaves the client waiting for the rest: end it
	}
	w.finished = true
	if cap(w.buf) <= keepBuffer {
		w.c.out = w.buf[:0]
	} else {
		w.c.out = nil // a large body's buffer is not kept by an idle connection
	}
	return w.c.bw.Flush()
}

// bodyAllowed reports whether a response with this status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
