package mcp

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzReadResponseAsNetHTTP: whatever bytes a server sends, a response
// readResponse takes reads as http.ReadResponse reads it (status, header,
// length, body and whether the body ends in an error), and leaves the
// reader where ReadResponse's body leaves it (after a body read to its
// end: a body that fails closes the connection); one it leaves is
// ReadResponse's, untouched. The bytes come all at once or one at a time.
func FuzzReadResponseAsNetHTTP(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\n{}\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nab\r\n0;x\r\nX-T: 1\r\nX-U: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked \r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\n0\n\n",
		// Found by fuzzing: a trailer that ends in a bare LF (ReadResponse
		// wants a CRLF CRLF ahead), control bytes in a value, a chunked
		// body with a Content-Length that is no length.
		"HTTP/1.1 200 \r\nTrAnsfer-EnCoding:Chunked\r\n\r\n0\r\n\n0",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\n\n",
		"HTTP/1.1 200 \r\nContent-Length:A\r\nTrAnsfer-EnCoding:Chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nmcp-session-id: s\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nSet-Cookie: a\r\nContent-Length: 0\r\nset-cookie: b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nKeep-Alive:  timeout=5 \t\r\nX-Empty:\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: upgrade\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: close\u00a0, keep-alive\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: \u0085close\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: cloſe\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive close\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 3\r\n\r\nno\n",
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200  OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 299 Fine Thanks\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 0200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 +20 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n  more\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 01\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\n Content-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTrailer: X-T\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nX-Bin: \x01\x7f\xff\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 600 Big\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 999 Big\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Len",
		"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
		"",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s+"HTTP/1.1 204 No Content\r\n\r\n"), true)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	f.Fuzz(func(t *testing.T, raw []byte, oneByte bool) {
		if len(raw) > 64<<10 {
			return
		}
		ours, ok, oursLeft := readFuzzed(req, raw, oneByte, true)
		if !ok {
			return // left to ReadResponse, or refused
		}
		theirs, _, theirsLeft := readFuzzed(req, raw, oneByte, false)
		if ours.BodyErr && theirs.BodyErr {
			// A body that fails closes its connection: what is left of
			// it is never read.
			oursLeft, theirsLeft = "", ""
		}
		if !reflect.DeepEqual(ours, theirs) || oursLeft != theirsLeft {
			t.Fatalf("%q\nours:       %+v, left %q\nnet/http's: %+v, left %q", raw, ours, oursLeft, theirs, theirsLeft)
		}
	})
}

// readFuzzed reads raw's first final response as h1Transport does (ours:
// ok tells whether readResponse took a head of it) or with ReadResponse
// alone, and what is left after its body.
func readFuzzed(req *http.Request, raw []byte, oneByte, ours bool) (readReply, bool, string) {
	var r io.Reader = strings.NewReader(string(raw))
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	br := bufio.NewReaderSize(r, 16<<10)
	took := false
	for {
		var resp *http.Response
		var err error
		if ours {
			resp, err = readResponse(br, req)
			took = took || resp != nil
		}
		if resp == nil && err == nil {
			resp, err = http.ReadResponse(br, req)
		}
		if err != nil {
			return readReply{Err: true}, false, ""
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		body, err := io.ReadAll(resp.Body)
		left, _ := io.ReadAll(br)
		return readReply{resp.Status, resp.StatusCode, resp.Header, resp.ContentLength, resp.TransferEncoding,
			resp.Close, string(body), false, err != nil}, took, string(left)
	}
}

// FuzzWriteRequestAsNetHTTP: a request writeRequest writes itself is the
// bytes Request.Write writes, or reads back (http.ReadRequest) as the same
// request, or is refused by ReadRequest as Request.Write's is.
func FuzzWriteRequestAsNetHTTP(f *testing.F) {
	f.Add(true, "127.0.0.1:8080", "/mcp?x=1", "Mcp-Session-Id", "abc", "User-Agent", "quiver", []byte(`{"jsonrpc":"2.0"}`), false)
	f.Add(false, "example.com", "/mcp", "Last-Event-ID", " 7\t", "", "", []byte(nil), true)
	f.Add(true, "[::1]:81", "/a%20b/c?d=%zz#frag", "idempotency-key", "k1", "Connection", "keep-alive", []byte("x"), true)
	f.Add(true, "h", "/", "X-Empty", "", "User-Agent", "", []byte(""), false)
	f.Add(true, "h_x.example", "//double", "X-Utf8", "é\x00\x7f", "Host", "other", []byte("{}"), false)
	f.Add(true, "00", "/", "0", "", "0", "\x13", []byte(""), true)
	// Connection as Request.Write reads it: the first value only, tokens
	// bounded by a space too, ASCII case only.
	f.Add(true, "h", "/", "Connection", "keep-alive close", "", "", []byte("{}"), true)
	f.Add(true, "h", "/", "Connection", "keep-alive", "Connection", "close", []byte("{}"), true)
	f.Add(true, "h", "/", "Connection", "cloſe", "", "", []byte("{}"), true)
	f.Add(true, "0", "0", "0", "", "User-Agent", " ", []byte(""), false) // found by fuzzing
	f.Fuzz(func(t *testing.T, post bool, host, path, k1, v1, k2, v2 string, body []byte, closeIt bool) {
		method := http.MethodGet
		if post {
			method = http.MethodPost
		}
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(string(body))
		}
		mk := func() *http.Request {
			req, err := http.NewRequest(method, "http://"+host+path, rd)
			if err != nil {
				return nil
			}
			if body != nil {
				req.Body = io.NopCloser(strings.NewReader(string(body)))
				if len(body) == 0 {
					req.Body = http.NoBody
				}
			}
			req.Header[k1] = append(req.Header[k1], v1)
			if k2 != "" {
				req.Header[k2] = append(req.Header[k2], v2)
			}
			req.Close = closeIt
			return req
		}
		req := mk()
		if req == nil {
			return
		}
		var ours, theirs bytes.Buffer
		bw := bufio.NewWriter(&ours)
		ok, err := writeRequest(bw, req)
		if !ok {
			if bw.Buffered() > 0 {
				t.Fatalf("left to Request.Write with %d bytes written", bw.Buffered())
			}
			return
		}
		bw.Flush()
		if err != nil {
			return
		}
		if err := mk().Write(&theirs); err != nil {
			t.Fatalf("writeRequest wrote %q; Request.Write failed: %v", ours.String(), err)
		}
		if bytes.Equal(ours.Bytes(), theirs.Bytes()) {
			return
		}
		a, aErr := readBackFuzzed(ours.Bytes())
		b, bErr := readBackFuzzed(theirs.Bytes())
		if aErr != nil && bErr != nil {
			return // both refused by a server (a control byte in a value, which Request.Write sends too)
		}
		if aErr != nil || bErr != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("ours:\n%q (%v)\nnet/http's:\n%q (%v)", ours.String(), aErr, theirs.String(), bErr)
		}
	})
}

func readBackFuzzed(raw []byte) (wroteRequest, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return wroteRequest{}, err
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return wroteRequest{}, err
	}
	return wroteRequest{req.Method, req.RequestURI, req.Host, req.Header, req.ContentLength, req.Close, string(body)}, nil
}
