package mcp

// The h1 transport's own reading and writing of the usual exchange.
//
// net/http's Request.Write and ReadResponse are general: the first builds a
// transfer writer and sorts the header through a pooled sorter, the second
// makes a string of every header value and of every key it does not know,
// and a reader and a body for the transfer. On the fast path that was a
// tenth of Quiver's CPU for a call besides the system calls. writeRequest
// and readResponse do the same for the exchanges the fast path makes (a
// POST or GET with a known length, answered with a length or in chunks),
// and leave everything else to net/http: a request they do not take is
// written by Request.Write, and a response whose head they do not take is
// read by ReadResponse from its start, since they read the head by peeking.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// writeRequest writes req to bw as req.Write would, or returns false
// having written nothing when req is not a plain one: a method other than
// POST or GET, a body of unknown length, trailers, a header value over
// several lines, a host or URI that net/http would clean or refuse.
func writeRequest(bw *bufio.Writer, req *http.Request) (bool, error) {
	if !plainRequest(req) {
		return false, nil
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	ruri := req.URL.RequestURI()
	if !plainHost(host) || !plainText(ruri) {
		return false, nil
	}
	keys := make([]string, 0, 16)
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			if k == "User-Agent" && !plainValues(vv) {
				return false, nil
			}
			continue
		}
		if !plainKey(k) || !plainValues(vv) {
			return false, nil
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)

	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua := "Go-http-client/1.1" // net/http's default
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = vv[0]
		}
	}
	if ua != "" { // before trimming, as Request.Write: " " sends an empty one
		bw.WriteString("User-Agent: ")
		bw.WriteString(strings.Trim(ua, " \t"))
		bw.WriteString("\r\n")
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost {
		var num [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(num[:0], req.ContentLength, 10))
		bw.WriteString("\r\n")
	}
	if req.Close && !hasClose(req.Header["Connection"]) {
		bw.WriteString("Connection: close\r\n")
	}
	for _, k := range keys {
		for _, v := range req.Header[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(strings.Trim(v, " \t"))
			bw.WriteString("\r\n")
		}
	}
	if _, err := bw.WriteString("\r\n"); err != nil {
		closeBody(req)
		return true, err
	}
	if req.ContentLength > 0 {
		n, err := io.Copy(bw, io.LimitReader(req.Body, req.ContentLength))
		if err == nil {
			var extra int64
			extra, err = io.Copy(io.Discard, req.Body)
			n += extra
		}
		closeBody(req)
		if err == nil && n != req.ContentLength {
			err = errors.New("http: ContentLength=" + strconv.FormatInt(req.ContentLength, 10) +
				" with Body length " + strconv.FormatInt(n, 10))
		}
		return true, err
	}
	closeBody(req)
	return true, nil
}

// plainRequest reports whether req is one writeRequest writes itself.
func plainRequest(req *http.Request) bool {
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		return false
	}
	if req.URL.Opaque != "" || len(req.TransferEncoding) > 0 || req.Trailer != nil || req.ContentLength < 0 {
		return false
	}
	noBody := req.Body == nil || req.Body == http.NoBody
	if (req.ContentLength == 0) != noBody {
		return false // a body of unknown length, or none for a length
	}
	return httptrace.ContextClientTrace(req.Context()) == nil
}

// plainHost reports whether a Host is sent as it is: an ASCII name or
// address without a zone, which net/http neither converts nor cleans.
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return true
}

// plainText reports whether s has no control bytes, spaces or bytes past
// ASCII.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}

// plainKey reports whether k is a header name (an RFC 9110 token).
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// plainValues reports whether each value is one line: net/http writes a
// CR or LF in a value as a space, which writeRequest leaves to it.
func plainValues(vv []string) bool {
	for _, v := range vv {
		if strings.ContainsAny(v, "\r\n") {
			return false
		}
	}
	return true
}

// hasClose reports whether the first of vv names the token close, as
// Request.Write reads Connection (net/http's hasToken: ASCII case ignored,
// bounded by a space, tab or comma).
func hasClose(vv []string) bool {
	const token = "close"
	if len(vv) == 0 {
		return false
	}
	v := vv[0]
	for sp := 0; sp+len(token) <= len(v); sp++ {
		if sp > 0 && !tokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !tokenBoundary(v[end]) {
			continue
		}
		if asciiFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func tokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// asciiFold reports whether s is lower, ASCII case ignored (strings.EqualFold
// would also take Unicode's folds, such as the long s of "cloſe").
func asciiFold(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != lower[i] && c|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// maxHead bounds the response head readResponse reads itself; a longer one
// is ReadResponse's.
const maxHead = 8 << 10

// readResponse reads the response to req from br as http.ReadResponse
// would, or returns nil with nothing read when its head is not a plain
// one: HTTP/1.1, a final status other than 204 or 304, a Content-Length or
// a chunked body, no folded lines, no trailers announced, no Pragma (which
// ReadResponse copies to Cache-Control).
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	head, err := peekHead(br)
	if head == nil {
		return nil, err
	}
	resp, ok := parseHead(head, req)
	if !ok {
		return nil, nil
	}
	br.Discard(len(head))
	if resp.ContentLength >= 0 {
		resp.Body = &h1Fixed{r: br, left: resp.ContentLength}
	} else {
		resp.Body = &h1Chunked{r: br, cr: httputil.NewChunkedReader(br)}
	}
	return resp, nil
}

// peekHead returns the response head at the start of br, up to and with its
// blank line, without reading it; nil when it is longer than maxHead or
// the connection ends first (and the error, if a read failed before any
// of it came).
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 0; ; {
		buf, err := br.Peek(max(br.Buffered(), n+1))
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			if bareLF(buf[:i]) {
				return nil, nil
			}
			return buf[:i+4], nil
		}
		if len(buf) == 0 && err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // as ReadResponse has it
			}
			return nil, err
		}
		if err != nil || len(buf) >= maxHead || len(buf) >= br.Size() || bareLF(buf) {
			// The rest is ReadResponse's: it reads a head whose lines end
			// in a bare LF, which would never show a CRLF CRLF here.
			return nil, nil
		}
		n = len(buf)
	}
}

// bareLF reports whether b has an LF without a CR before it.
func bareLF(b []byte) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// parseHead reads a plain response head (see readResponse).
func parseHead(head []byte, req *http.Request) (*http.Response, bool) {
	text := string(head[:len(head)-2]) // each line with its CRLF
	line, rest, _ := strings.Cut(text, "\r\n")
	if len(line) < 12 || line[:9] != "HTTP/1.1 " || (len(line) > 12 && line[12] != ' ') {
		return nil, false
	}
	code, err := strconv.Atoi(line[9:12])
	if err != nil || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified || code > 599 {
		return nil, false
	}
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		return nil, false
	}
	lines := strings.Count(rest, "\r\n")
	h := make(http.Header, lines)
	values := make([]string, lines)
	for i := 0; rest != ""; i++ {
		line, rest, _ = strings.Cut(rest, "\r\n")
		k, v, ok := strings.Cut(line, ":")
		if !ok || !plainKey(k) || !fieldValue(v) {
			return nil, false // a folded line, a control byte, a malformed name
		}
		k = headerKey(k)
		values[i] = strings.Trim(v, " \t")
		if vv := h[k]; vv != nil {
			h[k] = append(vv, values[i])
		} else {
			h[k] = values[i : i+1 : i+1]
		}
	}
	if _, ok := h["Pragma"]; ok {
		return nil, false
	}
	if _, ok := h["Trailer"]; ok {
		return nil, false
	}
	resp := &http.Response{StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Request: req, ContentLength: -1}
	if text[:12] == "HTTP/1.1 200" && strings.HasPrefix(text[12:], " OK\r\n") {
		resp.Status = "200 OK"
	} else {
		resp.Status, _, _ = strings.Cut(text[9:], "\r\n")
	}
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	switch {
	case len(te) == 1 && len(te[0]) == len("chunked") && asciiFold(te[0], "chunked"):
		// ASCII case only, as ReadResponse: strings.EqualFold would take
		// "chun\u212aed" (a Kelvin sign), which ReadResponse refuses.
		if len(cl) > 1 {
			return nil, false // ReadResponse's: it takes them if they agree
		}
		if len(cl) == 1 {
			// Chunked overrides it, but ReadResponse still refuses one
			// that is no length (fixLength).
			if _, err := strconv.ParseUint(cl[0], 10, 63); err != nil {
				return nil, false
			}
		}
		delete(h, "Transfer-Encoding")
		delete(h, "Content-Length")
		resp.TransferEncoding = chunkedOnly
	case len(te) == 0 && len(cl) == 1:
		n, err := strconv.ParseUint(cl[0], 10, 63)
		if err != nil {
			return nil, false
		}
		resp.ContentLength = int64(n)
	default:
		return nil, false // read to the close, or what ReadResponse refuses
	}
	// As ReadResponse reads it: tokens trimmed of spaces and tabs only,
	// ASCII case ignored.
	if resp.Close = httpguts.HeaderValuesContainsToken(h["Connection"], "close"); resp.Close {
		delete(h, "Connection") // as ReadResponse has it
	}
	return resp, true
}

var chunkedOnly = []string{"chunked"}

// fieldValue reports whether v has only the bytes ReadResponse takes in a
// header value (RFC 9110's field-vchar, SP and HTAB): no control byte, a
// bare CR or LF among them, and no DEL, which ReadResponse refuses.
func fieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// headerKey is k in http.Header's canonical form, a constant for the
// headers a server usually sends.
func headerKey(k string) string {
	for _, c := range commonKeys {
		if len(c) == len(k) && strings.EqualFold(c, k) {
			return c
		}
	}
	return textproto.CanonicalMIMEHeaderKey(k)
}

var commonKeys = [...]string{"Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Date", "Server", "Cache-Control", "Mcp-Session-Id", "Content-Encoding", "Vary", "X-Accel-Buffering",
	"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Etag", "Expires", "Last-Modified",
	"Set-Cookie", "Www-Authenticate", "Location", "Retry-After", "Mcp-Protocol-Version", "X-Powered-By",
	"X-Request-Id", "Strict-Transport-Security", "Alt-Svc", "Via"}

// h1Fixed is a body of a known length.
type h1Fixed struct {
	r    *bufio.Reader
	left int64
}

func (b *h1Fixed) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left <= 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *h1Fixed) Close() error { return nil }

// h1Chunked is a chunked body, read with its trailer (which is dropped).
type h1Chunked struct {
	r   *bufio.Reader
	cr  io.Reader
	err error
}

func (b *h1Chunked) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.cr.Read(p)
	if err == io.EOF {
		if err = b.trailer(); err == nil {
			err = io.EOF
		}
	}
	b.err = err
	return n, err
}

// trailer reads the lines after the last chunk, up to the blank one.
func (b *h1Chunked) trailer() error {
	buf, err := b.r.Peek(2)
	if string(buf) == "\r\n" {
		b.r.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	// As net/http's body.readTrailer: a trailer must end in a CRLF CRLF
	// within the reader's buffer (ReadMIMEHeader alone would take a bare
	// LF for the blank line, leaving bytes that ReadResponse refuses).
	if !upcomingDoubleCRLF(b.r) {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	_, err = textproto.NewReader(b.r).ReadMIMEHeader()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// upcomingDoubleCRLF is net/http's seeUpcomingDoubleCRLF: whether a CRLF
// CRLF comes up within br's buffer.
func upcomingDoubleCRLF(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := br.Peek(n)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (b *h1Chunked) Close() error { return nil }
