package mcp

import (
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// TestHandshakeFailureIsUnreachable: a server that takes the session's
// initialize and never answers it (or drops the connection) ran no tool, so
// a call or a listing that needed that session is unreachable, which
// releases the caller's key, never an unknown outcome, which would burn it.
func TestHandshakeFailureIsUnreachable(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"silent": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"dropped": func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int64
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				handler(w, r)
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			c := setup(t, &Options{AllowPrivate: true, ConnectTimeout: 300 * time.Millisecond})
			tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Version: 1,
				Config: map[string]string{"url": "http://" + ln.Addr().String() + "/mcp"}}
			_, err = c.Call(ctxFor(t, 10*time.Second), tool, "increment", json.RawMessage(`{}`))
			if k := connectors.KindOf(err); k != connectors.KindUnreachable {
				t.Errorf("call: kind %v (%v), want unreachable", k, err)
			}
			_, err = c.Actions(ctxFor(t, 10*time.Second), tool)
			if k := connectors.KindOf(err); k != connectors.KindUnreachable {
				t.Errorf("actions: kind %v (%v), want unreachable", k, err)
			}
			if requests.Load() == 0 {
				t.Error("the server saw no request: the handshake was not sent")
			}
		})
	}
}
