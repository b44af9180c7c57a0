package httpserver

// What the server makes of a request's head beyond http.ReadRequest: the
// refusals net/http's server adds, and the framing RFC 9112 asks a server
// to distrust. http.ReadRequest drops fields these decisions need (the
// Host header; Content-Length when the body is chunked; Transfer-Encoding
// in HTTP/1.0), so where one matters the server reads them from the raw
// head: the bytes already in the read buffer, or a copy kept of a head that
// arrived in pieces (see conn.readRequest). The common request (HTTP/1.1,
// origin-form, a Host, no chunked body) needs neither.

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// malformedHeader is http.ReadRequest's error for a header line it refuses
// (a control character in the value, say), which quotes the whole line.
const malformedHeader = "malformed MIME header line: "

// parseRefusal is the refusal of a request http.ReadRequest could not
// parse. For a malformed header line it names the field but does not
// repeat the line, which may hold a credential; nor does it repeat
// anything else net/http quotes of the request (the request line, a header
// value): the message goes to the client and to the log. head is the raw
// head, or nil if not known.
func parseRefusal(err error, head []byte) *Refusal {
	msg := err.Error()
	if line, ok := strings.CutPrefix(msg, malformedHeader); ok {
		if unq, e := strconv.Unquote(line); e == nil {
			line = unq
		}
		if name, _, ok := strings.Cut(line, ":"); ok && httpguts.ValidHeaderFieldName(name) {
			name = http.CanonicalHeaderKey(name)
			return &Refusal{Status: http.StatusBadRequest, Header: name,
				Message: fmt.Sprintf("The request's %s header holds a character HTTP does not allow in a header value.", shownName(name))}
		}
		return &Refusal{Status: http.StatusBadRequest, Message: "The request has a malformed header line."}
	}
	// http.ReadRequest takes only "Transfer-Encoding: chunked", and says
	// "unsupported transfer encoding" or "too many transfer encodings" of
	// anything else.
	if head != nil && strings.Contains(msg, "transfer encoding") {
		return codingRefusal(head)
	}
	// What net/http quotes comes last, after a colon or "; got [":
	// "http: message cannot contain multiple Content-Length headers; got
	// [\"5\" \"6\"]" keeps its first clause.
	reason, _, _ := strings.Cut(msg, `"`)
	reason = strings.TrimRight(reason, " :[")
	reason = strings.TrimRight(strings.TrimSuffix(reason, " got"), " ;,")
	return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed HTTP request: %s.", reason)}
}

// maxShownName is how much of a header's name a refusal's message (and
// its log line) shows: a name may be as long as the head allows.
const maxShownName = 64

// shownName is a header name as a refusal shows it: cut to maxShownName
// bytes (a name is a token, ASCII only), "…" marking the cut.
func shownName(name string) string {
	if len(name) <= maxShownName {
		return name
	}
	return name[:maxShownName] + "…"
}

// codingRefusal refuses a Transfer-Encoding other than chunked alone. RFC
// 9112 6.3: when chunked is not the last coding, the body's length cannot
// be known, and the answer is 400; 6.1: a coding the server does not
// implement gets 501. net/http answers 501 to both. The codings are not
// repeated.
func codingRefusal(head []byte) *Refusal {
	var codings []string
	for f := (fields{rest: head}); f.next(); {
		if !f.is("transfer-encoding") {
			continue
		}
		if f.folded {
			return &Refusal{Status: http.StatusBadRequest, Message: "The request's Transfer-Encoding header is folded over lines."}
		}
		for c := range strings.SplitSeq(string(f.value), ",") {
			if c = strings.Trim(c, " \t"); c != "" { // a list may have empty elements
				codings = append(codings, c)
			}
		}
	}
	chunkedLast := false
	for i, c := range codings {
		name, _, params := strings.Cut(c, ";")
		name = strings.TrimRight(name, " \t")
		switch {
		case !httpguts.ValidHeaderFieldName(name): // a token
			return &Refusal{Status: http.StatusBadRequest, Message: "The request's Transfer-Encoding header is malformed."}
		case asciiEqual(name, "chunked"):
			if i != len(codings)-1 || params {
				return &Refusal{Status: http.StatusBadRequest, Message: "In the request's Transfer-Encoding, chunked must come once, last and without parameters."}
			}
			chunkedLast = true
		}
	}
	if !chunkedLast {
		return &Refusal{Status: http.StatusBadRequest, Message: "The request's Transfer-Encoding does not end in chunked, so its body's length is unknown."}
	}
	return &Refusal{Status: http.StatusNotImplemented, Message: "The request's transfer coding is not implemented; only chunked is."}
}

// check refuses what net/http's server refuses after parsing, what
// RFC 9112 3.2 has a server refuse of the Host header that net/http lets
// through, and a framing field folded over lines, which net/http joins. http.ReadRequest has checked header values already, and header
// names but for spaces, which it lets through. head is the request's raw
// head, or nil if not known.
func check(req *http.Request, head []byte) error {
	if req.ProtoMajor != 1 {
		return refuse(http.StatusHTTPVersionNotSupported, "HTTP/%d.%d is not supported; use HTTP/1.1.", req.ProtoMajor, req.ProtoMinor)
	}
	// http.ReadRequest has refused two Host headers, and moved the one to
	// req.Host unless the target is absolute-form (its authority wins),
	// and dropped it: only the head tells an empty Host from none, or a
	// malformed one behind an absolute-form target.
	hostRequired := req.ProtoAtLeast(1, 1) && req.Method != "CONNECT"
	switch {
	case req.Host != "" && !httpguts.ValidHostHeader(req.Host):
		return refuse(http.StatusBadRequest, "The request's Host header is malformed.")
	case req.Host != "" && req.URL.Host == "":
		// The common request: its Host header, checked.
	case head == nil:
		if req.Host == "" && hostRequired {
			return refuse(http.StatusBadRequest, "The request has no Host header.")
		}
	default:
		hosts := 0
		for f := (fields{rest: head}); f.next(); {
			if !f.is("host") {
				continue
			}
			hosts++
			if f.folded || !httpguts.ValidHostHeader(string(f.value)) {
				return refuse(http.StatusBadRequest, "The request's Host header is malformed.")
			}
		}
		if hosts == 0 && hostRequired {
			return refuse(http.StatusBadRequest, "The request has no Host header.")
		}
	}
	if head != nil && (bytes.Contains(head, []byte("\n ")) || bytes.Contains(head, []byte("\n\t"))) {
		// Obsolete line folding (RFC 9112 5.2), which http.ReadRequest
		// joins. In a framing field, a front proxy that does not join it
		// may frame the body otherwise: the way a request is smuggled.
		for f := (fields{rest: head}); f.next(); {
			if f.folded && (f.is("content-length") || f.is("transfer-encoding")) {
				return refuse(http.StatusBadRequest, "The request's %s header is folded over lines.", http.CanonicalHeaderKey(string(f.name)))
			}
		}
	}
	for k := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return refuse(http.StatusBadRequest, "The request has an invalid header name.")
		}
	}
	if e, ok := req.Header["Expect"]; ok {
		if len(e) != 1 || !strings.EqualFold(e[0], "100-continue") {
			return refuse(http.StatusExpectationFailed, "Only the expectation 100-continue is supported.")
		}
	}
	return nil
}

// suspectFraming reports whether a request's body is framed in a way RFC
// 9112 6.1 has the server answer and then close the connection for, as
// what follows may be a request smuggled past a front proxy that framed the
// body the other way: both Transfer-Encoding and Content-Length (the body
// is read chunked, as net/http reads it), or a Transfer-Encoding in HTTP/1.0
// (ignored, as net/http ignores it). net/http's server keeps both
// connections. head is the request's raw head; nil (not known) is taken
// for suspect.
func suspectFraming(req *http.Request, head []byte) bool {
	chunked := req.TransferEncoding != nil // http.ReadRequest takes chunked alone
	old := !req.ProtoAtLeast(1, 1)
	if !chunked && !old {
		return false
	}
	if head == nil {
		return true
	}
	other := "content-length"
	if old {
		other = "transfer-encoding"
	}
	for f := (fields{rest: head}); f.next(); {
		if f.is(other) {
			return true
		}
	}
	return false
}

// bufferedHead returns the request head (its line and headers, up to the
// empty line) br holds whole, so that reading it cannot wait, or nil. A
// head whose lines end in a bare LF is not recognised, and is read as a
// head that arrives in pieces.
func bufferedHead(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return b[:i+4]
	}
	return nil
}

// fields walks the header fields of a raw head that http.ReadRequest took,
// its lines ending in CRLF or LF as http.ReadRequest allows.
type fields struct {
	rest   []byte // from the line after the current field's
	line   bool   // the request line is behind
	name   []byte
	value  []byte // without surrounding spaces; a folded field's first line
	folded bool   // continued on the next lines (obsolete line folding)
}

// next moves to the next field, and reports whether there is one.
func (f *fields) next() bool {
	if !f.line {
		f.line = true
		f.cut()
	}
	for {
		line, ok := f.cut()
		if !ok || len(line) == 0 {
			return false // the empty line: the head's end
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 || line[0] == ' ' || line[0] == '\t' {
			continue // a folded field's continuation, or not a field
		}
		f.name, f.value = line[:colon], bytes.Trim(line[colon+1:], " \t")
		f.folded = len(f.rest) > 0 && (f.rest[0] == ' ' || f.rest[0] == '\t')
		return true
	}
}

// cut takes the next line off rest, without its line end.
func (f *fields) cut() ([]byte, bool) {
	i := bytes.IndexByte(f.rest, '\n')
	if i < 0 {
		f.rest = nil
		return nil, false
	}
	line := f.rest[:i]
	f.rest = f.rest[i+1:]
	return bytes.TrimSuffix(line, []byte("\r")), true
}

// is reports whether the field's name is lower, a lower-case name, in any
// case of ASCII letters (as textproto folds names; not Unicode's folding,
// which takes "K", the Kelvin sign, for k).
func (f *fields) is(lower string) bool { return asciiEqual(f.name, lower) }

// asciiEqual reports whether s is lower, a lower-case ASCII string, with
// ASCII letters in any case.
func asciiEqual[S string | []byte](s S, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
