package api

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/httpserver"
	"github.com/quiverhq/quiver/internal/metrics"
)

// A handler that panics after its answer has begun must not have the
// error envelope glued onto that answer, on a connection kept for the
// next request: the status is already out, so the only honest end is to
// abort the connection (http.ErrAbortHandler), as net/http documents.
func TestPanicAfterWriteAbortsTheConnection(t *testing.T) {
	s := New(Deps{Metrics: metrics.New(), Logger: slog.New(slog.DiscardHandler), Extra: []func(*gin.Engine, *gin.RouterGroup){
		func(r *gin.Engine, _ *gin.RouterGroup) {
			r.GET("/boom", func(c *gin.Context) { io.WriteString(c.Writer, `{"partial":`); panic("boom") })
		},
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserver.New(s.Handler(), nil)
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(c, "GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	b, _ := io.ReadAll(c)
	if strings.Contains(string(b), `{"partial":{`) || strings.Contains(string(b), "healthz") || strings.Count(string(b), "HTTP/1.1 ") > 0 && strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("a panic after the first write was answered as a whole response and the connection reused: %q", b)
	}
}
