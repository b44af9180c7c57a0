package httpserver_test

// What a handler writes, as it arrives: framing (held with a
// Content-Length, or streamed chunked), the headers the server adds or
// refuses, and the statuses that carry no body. Most checks read raw bytes
// and then send a second request on the same connection: a response framed
// one byte wrong shows up there, as a garbled second answer.

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pattern is n bytes that tell a missing or repeated chunk from the right one.
func pattern(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08d;", i)
	}
	return b.String()[:n]
}

const bufferLimit = 64 << 10 // the package's: past it a response streams

// A response that fits in bufferLimit goes out with a Content-Length; one
// past it is streamed chunked, unless the handler declared its length.
func TestResponseFraming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		handler     http.HandlerFunc
		want        string
		wantLength  int64 // -1: chunked
		wantChunked bool
	}{
		{"small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, "hello", 5, false},
		{"several writes", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("hel"))
			io.WriteString(w, "lo")
		}, "hello", 5, false},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, "", 0, false},
		{"declared length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			w.Write([]byte("hello"))
		}, "hello", 5, false},
		{"exactly bufferLimit", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, pattern(bufferLimit))
		}, pattern(bufferLimit), bufferLimit, false},
		{"one byte past bufferLimit", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, pattern(bufferLimit+1))
		}, pattern(bufferLimit + 1), -1, true},
		{"large in small writes", func(w http.ResponseWriter, r *http.Request) {
			p := pattern(300 << 10)
			for i := 0; i < len(p); i += 1000 {
				io.WriteString(w, p[i:min(i+1000, len(p))])
			}
		}, pattern(300 << 10), -1, true},
		{"large in one write", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(pattern(300 << 10)))
		}, pattern(300 << 10), -1, true},
		{"large with declared length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(300<<10))
			io.WriteString(w, pattern(300<<10))
		}, pattern(300 << 10), 300 << 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc, resp, body := getOnce(t, tc.handler)
			if body != tc.want {
				t.Fatalf("body: %d bytes, want %d", len(body), len(tc.want))
			}
			chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
			if resp.ContentLength != tc.wantLength || chunked != tc.wantChunked {
				t.Fatalf("Content-Length %d, chunked %v; want %d, %v", resp.ContentLength, chunked, tc.wantLength, tc.wantChunked)
			}
			checkNext(t, rc)
		})
	}
}

// HTTP/1.0 has no chunked framing: a streamed response ends with the
// connection, and says so.
func TestHTTP10StreamedResponse(t *testing.T) {
	t.Parallel()
	big := pattern(bufferLimit * 2)
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }), nil)
	rc := dial(t, ts.addr)
	rc.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, body := rc.read("GET")
	if body != big || resp.TransferEncoding != nil || resp.ContentLength != -1 || !resp.Close {
		t.Fatalf("%d bytes, Transfer-Encoding %v, Content-Length %d, close %v",
			len(body), resp.TransferEncoding, resp.ContentLength, resp.Close)
	}
}

// Flush sends what the handler wrote so far: the client reads it while the
// handler is still running.
func TestFlushStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second")
	}), nil)
	c := client(t)
	resp, err := c.Get(ts.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first;" {
		t.Fatalf("first part %q, %v", first, err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type %q, want it sniffed from the flushed part", ct)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// http.ResponseController reaches Flush too, and reports its error.
func TestResponseControllerFlush(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 1)
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "x")
		errs <- http.NewResponseController(w).Flush()
	}), nil)
	rc := dial(t, ts.addr)
	rc.send(get)
	if _, body := rc.read("GET"); body != "x" {
		t.Fatalf("body %q", body)
	}
	if err := <-errs; err != nil {
		t.Fatalf("Flush: %v", err)
	}
	checkNext(t, rc)
}

// HEAD gets the headers a GET would, Content-Length included, and no body.
func TestHEAD(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		handler    http.HandlerFunc
		wantLength int64 // -1: none
	}{
		{"written", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello world") }, 11},
		{"written large", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, pattern(200<<10)) }, 200 << 10},
		{"declared", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Length", "42") }, 42},
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := setup(t, respond(tc.handler), nil)
			rc := dial(t, ts.addr)
			rc.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, _ := rc.read("HEAD")
			if resp.ContentLength != tc.wantLength {
				t.Fatalf("Content-Length %d, want %d (-1: none)", resp.ContentLength, tc.wantLength)
			}
			if resp.TransferEncoding != nil {
				t.Errorf("Transfer-Encoding %v on HEAD", resp.TransferEncoding)
			}
			checkNext(t, rc)
		})
	}
}

// 204 and 304 carry no body and no framing headers, and a Write to them
// fails with http.ErrBodyNotAllowed. An empty Write is no body, and
// succeeds, as in net/http: a proxy copying an upstream's empty 204 body
// must not see an error.
func TestNoBodyStatuses(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNoContent, http.StatusNotModified} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			errs := make(chan error, 2)
			ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				_, err := w.Write(nil)
				errs <- err
				_, err = io.WriteString(w, "body")
				errs <- err
			}), nil)
			rc := dial(t, ts.addr)
			rc.send(get)
			resp, _ := rc.read("GET")
			if resp.StatusCode != status {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if err := <-errs; err != nil {
				t.Errorf("empty Write = %v, want nil", err)
			}
			if err := <-errs; !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("Write = %v, want http.ErrBodyNotAllowed", err)
			}
			for _, h := range []string{"Content-Length", "Transfer-Encoding", "Content-Type"} {
				if v, ok := resp.Header[h]; ok {
					t.Errorf("%s: %q on %d", h, v, status)
				}
			}
			if resp.TransferEncoding != nil {
				t.Errorf("Transfer-Encoding %v", resp.TransferEncoding)
			}
			checkNext(t, rc)
		})
	}
}

// A declared Content-Length binds the handler: writing past it fails with
// http.ErrContentLength, and writing short ends the connection, since the
// client would wait for the rest.
func TestDeclaredContentLength(t *testing.T) {
	t.Parallel()
	t.Run("over", func(t *testing.T) {
		t.Parallel()
		errs := make(chan error, 1)
		ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hel")
			_, err := io.WriteString(w, "lo!")
			errs <- err
			io.WriteString(w, "lo")
		}), nil)
		rc := dial(t, ts.addr)
		rc.send(get)
		if _, body := rc.read("GET"); body != "hello" {
			t.Fatalf("body %q", body)
		}
		if err := <-errs; !errors.Is(err, http.ErrContentLength) {
			t.Fatalf("Write = %v, want http.ErrContentLength", err)
		}
		checkNext(t, rc)
	})
	t.Run("short", func(t *testing.T) {
		t.Parallel()
		ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "hello")
		}), nil)
		rc := dial(t, ts.addr)
		rc.send(get)
		if _, body, err := rc.tryRead("GET"); !errors.Is(err, io.ErrUnexpectedEOF) || body != "hello" {
			t.Fatalf("body %q, %v; want the 5 bytes written, then the connection closed", body, err)
		}
	})
}

// Every response has a Date, unless the handler set its own or removed it.
func TestDateHeader(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		check   func(v []string) bool
	}{
		{"added", func(w http.ResponseWriter, r *http.Request) {}, func(v []string) bool {
			d, err := http.ParseTime(strings.Join(v, ""))
			return len(v) == 1 && err == nil && time.Since(d).Abs() < time.Minute
		}},
		{"added when streaming", func(w http.ResponseWriter, r *http.Request) { w.(http.Flusher).Flush() }, func(v []string) bool {
			return len(v) == 1
		}},
		{"handler's own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", "Tue, 01 Jan 2030 00:00:00 GMT")
		}, func(v []string) bool { return len(v) == 1 && v[0] == "Tue, 01 Jan 2030 00:00:00 GMT" }},
		{"suppressed", func(w http.ResponseWriter, r *http.Request) { w.Header()["Date"] = nil }, func(v []string) bool {
			return v == nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, resp, _ := getOnce(t, tc.handler)
			if v := resp.Header["Date"]; !tc.check(v) {
				t.Fatalf("Date %q", v)
			}
		})
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.Bytes()
}

// Content-Type is sniffed when the handler set none, as net/http does, and
// only then.
func TestContentType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"sniffed text", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, []string{"text/plain; charset=utf-8"}},
		{"sniffed html", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<!DOCTYPE html><p>hi") }, []string{"text/html; charset=utf-8"}},
		{"sniffed when streamed", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<!DOCTYPE html>"+strings.Repeat(" ", bufferLimit))
		}, []string{"text/html; charset=utf-8"}},
		{"handler's own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "<html>")
		}, []string{"application/json"}},
		{"suppressed", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "<html>")
		}, nil},
		{"no body", func(w http.ResponseWriter, r *http.Request) {}, nil},
		// A body with a Content-Encoding is not what it claims to be once
		// decoded, so net/http does not sniff it.
		{"encoded", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipped("hello"))
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, resp, _ := getOnce(t, tc.handler)
			if got := resp.Header["Content-Type"]; fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("Content-Type %q, want %q", got, tc.want)
			}
		})
	}
}

// Headers are fixed by WriteHeader (or the first Write): later changes are
// ignored, as in net/http.
func TestHeaderChangesAfterWriteHeaderIgnored(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		start func(http.ResponseWriter)
	}{
		{"WriteHeader", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated) }},
		{"Write", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated); io.WriteString(w, "body") }},
		{"Flush", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated); w.(http.Flusher).Flush() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Before", "1")
				tc.start(w)
				w.Header().Set("X-After", "1")
				w.Header().Set("X-Before", "2")
				w.Header().Set("Content-Length", "1")
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusTeapot) // superfluous
			}), nil)
			rc := dial(t, ts.addr)
			rc.send(get)
			resp, _ := rc.read("GET")
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Before") != "1" || resp.Header["X-After"] != nil || resp.Close {
				t.Fatalf("status %d, header %v, close %v", resp.StatusCode, resp.Header, resp.Close)
			}
			checkNext(t, rc)
		})
	}
}

// A header value with CR or LF in it cannot start a header (or a body) of
// its own; an invalid header name is dropped.
func TestHeaderInjection(t *testing.T) {
	t.Parallel()
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Evil", "a\r\nInjected: yes")
		w.Header().Set("X-Evil-Lf", "b\nInjected-Lf: yes\n\nbody")
		w.Header()["Bad Name\r\nInjected-Name: yes"] = []string{"v"}
		io.WriteString(w, "ok")
	}), nil)
	rc := dial(t, ts.addr)
	rc.send(get)
	resp, body := rc.read("GET")
	for _, h := range []string{"Injected", "Injected-Lf", "Injected-Name"} {
		if v, ok := resp.Header[h]; ok {
			t.Errorf("injected header %s: %q", h, v)
		}
	}
	if v := resp.Header.Get("X-Evil"); !strings.HasPrefix(v, "a") || !strings.Contains(v, "Injected: yes") {
		t.Errorf("X-Evil %q, want its value kept on one line", v)
	}
	if body != "ok" {
		t.Fatalf("body %q", body)
	}
	checkNext(t, rc)
}

// WriteHeader(103) sends an interim response at once; the final one follows,
// with the headers the handler had set by then.
func TestInterimResponse(t *testing.T) {
	t.Parallel()
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("X-Final", "1")
		io.WriteString(w, "final")
	}), nil)

	t.Run("raw", func(t *testing.T) {
		t.Parallel()
		rc := dial(t, ts.addr)
		rc.send(get)
		resp, _ := rc.read("GET")
		if resp.StatusCode != http.StatusEarlyHints || resp.Header.Get("Link") == "" || resp.Header.Get("X-Final") != "" {
			t.Fatalf("interim: %d %v", resp.StatusCode, resp.Header)
		}
		for _, h := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
			if resp.Header[h] != nil {
				t.Errorf("interim response has %s", h)
			}
		}
		resp, body := rc.read("GET")
		if resp.StatusCode != http.StatusOK || body != "final" || resp.Header.Get("X-Final") != "1" || resp.ContentLength != 5 {
			t.Fatalf("final: %d %q %v", resp.StatusCode, body, resp.Header)
		}
		checkNext(t, rc)
	})

	t.Run("client", func(t *testing.T) {
		t.Parallel()
		var interim []int
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				interim = append(interim, code)
				return nil
			},
		})
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.url, nil)
		c := client(t)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if fmt.Sprint(interim) != "[103]" || string(b) != "final" {
			t.Fatalf("interim %v, body %q", interim, b)
		}
	})
}

// An invalid status is a programming error, as in net/http.
func TestWriteHeaderInvalidCodePanics(t *testing.T) {
	t.Parallel()
	panics := make(chan any, 1)
	ts := setup(t, respond(func(w http.ResponseWriter, r *http.Request) {
		defer func() { panics <- recover() }()
		w.WriteHeader(42)
	}), nil)
	rc := dial(t, ts.addr)
	rc.send(get)
	rc.read("GET")
	if v := <-panics; v == nil {
		t.Fatal("WriteHeader(42) did not panic")
	}
}
