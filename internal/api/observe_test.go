package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/httpserver"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/testlog"
)

// observed serves New with extra routes on a real httpserver and returns
// its address, metrics and log.
func observed(t *testing.T, extra func(r *gin.Engine)) (string, *metrics.Metrics, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	m := metrics.New()
	s := New(Deps{Metrics: m, Logger: logging.New(logs, "debug"), Extra: []func(*gin.Engine, *gin.RouterGroup){
		func(r *gin.Engine, _ *gin.RouterGroup) {
			if extra != nil {
				extra(r)
			}
		},
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserver.New(s.Handler(), nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), m, logs
}

// scrape is the value of each series m exports (quiver_ series only).
func scrape(m *metrics.Metrics) map[string]string {
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]string{}
	for _, l := range strings.Split(w.Body.String(), "\n") {
		if i := strings.LastIndexByte(l, ' '); i > 0 && strings.HasPrefix(l, "quiver_") {
			out[l[:i]] = l[i+1:]
		}
	}
	return out
}

// requestLines waits for n "request" log lines and returns them decoded.
func requestLines(t *testing.T, logs *testlog.Buffer, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out []map[string]any
		for _, l := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "request" {
				out = append(out, rec)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A method is a token of any length the request head allows (1 MiB):
// the request's log line must not carry it whole, or each request of a
// caller inventing methods writes up to a megabyte of log.
func TestRequestLineBoundsTheMethod(t *testing.T) {
	addr, m, logs := observed(t, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "%s /healthz HTTP/1.1\r\nHost: x\r\n\r\n", strings.Repeat("M", 100_000))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lines := requestLines(t, logs, 1)
	if len(lines) != 1 {
		t.Fatalf("want one request line, got %d", len(lines))
	}
	method, _ := lines[0]["method"].(string)
	if len(method) > 64 || !strings.HasPrefix(method, "MMMM") {
		t.Errorf("request line's method is %d bytes (%.40q…), want at most 64 and its start", len(method), method)
	}
	if got := scrape(m)[`quiver_http_requests_total{method="OTHER",route="unmatched",status="405"}`]; got != "1" {
		t.Errorf("quiver_http_requests_total{method=OTHER,route=unmatched,status=405} = %q, want 1", got)
	}
}

// A handler that panics after its answer began aborts the connection
// (TestPanicAfterWriteAbortsTheConnection); the request still counts in
// the HTTP metrics and has its request line, once.
func TestAbortedRequestIsCountedAndLogged(t *testing.T) {
	addr, m, logs := observed(t, func(r *gin.Engine) {
		r.GET("/boom", func(c *gin.Context) { io.WriteString(c.Writer, `{"partial":`); panic("boom") })
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /boom HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-boom\r\n\r\n")
	_, _ = io.ReadAll(c)
	lines := requestLines(t, logs, 1)
	if len(lines) != 1 || lines[0]["route"] != "/boom" || lines[0]["request_id"] != "rid-boom" {
		t.Errorf("request lines of the aborted request: %v\nlog:\n%s", lines, logs.String())
	}
	got := scrape(m)
	if v := got[`quiver_http_requests_total{method="GET",route="/boom",status="200"}`]; v != "1" {
		t.Errorf("quiver_http_requests_total{method=GET,route=/boom,status=200} = %q, want 1", v)
	}
	if v := got[`quiver_http_request_duration_seconds_count{method="GET",route="/boom"}`]; v != "1" {
		t.Errorf("quiver_http_request_duration_seconds_count{method=GET,route=/boom} = %q, want 1", v)
	}
}
