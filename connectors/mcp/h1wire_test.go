package mcp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"testing"
)

// TestWriteRequestAsNetHTTP: each request writeRequest takes reads back as
// the same request Request.Write writes; the others it leaves to it,
// having written nothing.
func TestWriteRequestAsNetHTTP(t *testing.T) {
	post := func(body string, set func(*http.Request)) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp?x=1", strings.NewReader(body))
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header.Set("Mcp-Session-Id", "abc")
		req.Header["idempotency-key"] = []string{"k1"} // as connectors.SentOnce leaves it
		req.Header["X-Many"] = []string{"one", "  two\t"}
		if set != nil {
			set(req)
		}
		return req
	}
	get, _ := http.NewRequest(http.MethodGet, "http://example.com/mcp", nil)
	get.Header.Set("Last-Event-ID", "7")
	taken := map[string]*http.Request{
		"post":          post(`{"jsonrpc":"2.0"}`, nil),
		"get":           get,
		"empty post":    post("", func(r *http.Request) { r.Body, r.ContentLength = nil, 0 }),
		"user agent":    post("{}", func(r *http.Request) { r.Header.Set("User-Agent", " quiver ") }),
		"no user agent": post("{}", func(r *http.Request) { r.Header["User-Agent"] = nil }),
		"close":         post("{}", func(r *http.Request) { r.Close = true }),
		"host":          post("{}", func(r *http.Request) { r.Host = "other.example:81" }),
	}
	for name, req := range taken {
		t.Run(name, func(t *testing.T) {
			var ours, theirs bytes.Buffer
			clone := req.Clone(req.Context())
			if req.GetBody != nil {
				clone.Body, _ = req.GetBody()
			}
			bw := bufio.NewWriter(&ours)
			ok, err := writeRequest(bw, req)
			if !ok || err != nil {
				t.Fatalf("writeRequest: %v %v", ok, err)
			}
			bw.Flush()
			if err := clone.Write(&theirs); err != nil {
				t.Fatal(err)
			}
			a, b := readBack(t, ours.Bytes()), readBack(t, theirs.Bytes())
			if !reflect.DeepEqual(a, b) {
				t.Errorf("ours:\n%q\nnet/http's:\n%q", ours.String(), theirs.String())
			}
		})
	}
	chunked := post("{}", func(r *http.Request) { r.ContentLength = -1 })
	traced := post("{}", nil)
	traced = traced.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
	left := map[string]*http.Request{
		"unknown length": chunked,
		"two lines":      post("{}", func(r *http.Request) { r.Header.Set("X-Bad", "a\r\nInjected: 1") }),
		"bad name":       post("{}", func(r *http.Request) { r.Header["Bad Name"] = []string{"1"} }),
		"put":            post("{}", func(r *http.Request) { r.Method = http.MethodPut }),
		"unicode host":   post("{}", func(r *http.Request) { r.Host = "bücher.example" }),
		"traced":         traced,
	}
	for name, req := range left {
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		if ok, _ := writeRequest(bw, req); ok || bw.Buffered() > 0 {
			t.Errorf("%s: taken (%d bytes)", name, bw.Buffered())
		}
	}
}

type wroteRequest struct {
	Method, URI, Host string
	Header            http.Header
	Length            int64
	Close             bool
	Body              string
}

func readBack(t *testing.T, raw []byte) wroteRequest {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("%v: %q", err, raw)
	}
	body, _ := io.ReadAll(req.Body)
	return wroteRequest{req.Method, req.RequestURI, req.Host, req.Header, req.ContentLength, req.Close, string(body)}
}

// TestReadResponseAsNetHTTP: every response reads as http.ReadResponse
// reads it (readResponse, or ReadResponse after it when it leaves one),
// its body included, and leaves the reader where the next response starts.
func TestReadResponseAsNetHTTP(t *testing.T) {
	const next = "HTTP/1.1 204 No Content\r\n\r\n"
	cases := map[string]string{
		"json":             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\nDate: x\r\n\r\n{\"a\":1}",
		"events":           "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\n{}\n\r\n0\r\n\r\n",
		"trailer":          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n",
		"lower case":       "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nx-custom-thing: 1\r\nmcp-session-id: s\r\n\r\n{}",
		"twice":            "HTTP/1.1 200 OK\r\nSet-Cookie: a\r\nContent-Length: 0\r\nset-cookie: b\r\nVary: x\r\n\r\n",
		"spaces":           "HTTP/1.1 200 OK\r\nKeep-Alive:  timeout=5 \t\r\nX-Empty:\r\nContent-Length: 1\r\n\r\nx",
		"close":            "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx",
		"refused":          "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 3\r\n\r\nno\n",
		"no reason":        "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"odd reason":       "HTTP/1.1 299 Fine Thanks\r\nContent-Length: 0\r\n\r\n",
		"length and chunk": "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		"bare LF":          "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
		"folded":           "HTTP/1.1 200 OK\r\nX-A: 1\r\n  more\r\nContent-Length: 0\r\n\r\n",
		"no content":       "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
		"http/1.0":         "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"early hints":      "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"pragma":           "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
		"two lengths":      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"bad length":       "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
		"gzip coding":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"bad status":       "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"cut head":         "HTTP/1.1 200 OK\r\nContent-Len",
		"cut body":         "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
		"nothing":          "",
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			raw := raw
			if !strings.HasPrefix(name, "cut") && name != "nothing" {
				raw += next
			}
			switch name {
			case "json", "events", "trailer", "lower case", "twice", "spaces", "close", "refused", "no reason",
				"odd reason", "length and chunk":
				if resp, _ := readResponse(bufio.NewReader(strings.NewReader(raw)), req); resp == nil {
					t.Error("left to ReadResponse")
				}
			}
			a, aLeft := readOne(req, raw, true)
			b, bLeft := readOne(req, raw, false)
			if !reflect.DeepEqual(a, b) || aLeft != bLeft {
				t.Errorf("ours: %+v, left %q\nnet/http's: %+v, left %q", a, aLeft, b, bLeft)
			}
		})
	}
}

type readReply struct {
	Status           string
	Code             int
	Header           http.Header
	Length           int64
	TransferEncoding []string
	Close            bool
	Body             string
	Err, BodyErr     bool
}

// readOne reads raw's first final response, as h1Transport does (ours) or
// with ReadResponse alone, and what is left after its body.
func readOne(req *http.Request, raw string, ours bool) (readReply, string) {
	br := bufio.NewReaderSize(strings.NewReader(raw), 16<<10)
	for {
		var resp *http.Response
		var err error
		if ours {
			resp, err = readResponse(br, req)
		}
		if resp == nil && err == nil {
			resp, err = http.ReadResponse(br, req)
		}
		if err != nil {
			return readReply{Err: true}, ""
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		body, err := io.ReadAll(resp.Body)
		left, _ := io.ReadAll(br)
		return readReply{resp.Status, resp.StatusCode, resp.Header, resp.ContentLength, resp.TransferEncoding,
			resp.Close, string(body), false, err != nil}, string(left)
	}
}
