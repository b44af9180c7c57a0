package httprequest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/connectors/httprequest"
	"github.com/quiverhq/quiver/internal/egress"
)

// TestNotWrittenIntoAClosingConnection: a server closes a connection that
// has idled for its keep-alive timeout (Node's http server, uvicorn and
// Apache after 5 s), and a POST written into it while the close is on its
// way to Quiver is lost unread: net/http does not re-send a POST, and the
// call's outcome is unknown (504 tool_outcome_unknown), terminal for a
// non-retryable action. It happened to 4 of 16 calls spaced 5.9-6.05 s
// apart over a 30 ms link to a Node server. The connector reuses an idle
// connection for 4 s (egress.DefaultIdleTimeout), under those servers' 5 s
// with a margin for the way there, so calls spaced longer take a new one.
//
// The test scales that down: the server keeps an idle connection for
// 400 ms, the link delays each way by 30 ms, the connector reuses one for
// 4/5 of the server's time, and calls are spaced so that each request
// reaches the server just after it has closed the connection, before
// the close reaches the connector. With net/http's 90 s, the old idle
// limit, that loses calls (their server never saw them); with the scaled
// default, none.
func TestNotWrittenIntoAClosingConnection(t *testing.T) {
	t.Parallel()
	const (
		serverIdle = 400 * time.Millisecond
		oneWay     = 30 * time.Millisecond
		// A request written after idling gap reaches the server 2*oneWay
		// later, past serverIdle, while the server's close reaches the
		// client serverIdle after it began to idle: gap is in the middle
		// of that window, oneWay from either end.
		gap   = serverIdle - oneWay
		calls = 6
	)
	// The default is to Node's 5 s as scaled is to serverIdle.
	scaled := time.Duration(float64(serverIdle) * float64(egress.DefaultIdleTimeout) / float64(5*time.Second))
	for _, tc := range []struct {
		name string
		idle time.Duration
		lost bool // some calls are lost, as they were with net/http's 90 s
	}{
		{"old 90 s limit", 90 * time.Second, true},
		{"default, scaled", scaled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got, conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				got.Add(1)
				io.WriteString(w, `{"ok":true}`)
			}))
			srv.Config.IdleTimeout = serverIdle
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			base := "http://" + connectortest.SlowLink(t, srv.Listener.Addr().String(), oneWay)
			c := httprequest.New(httprequest.Options{AllowPrivate: true, IdleTimeout: tc.idle})
			var lost []string
			for i := range calls {
				if i > 0 {
					time.Sleep(gap)
				}
				_, err := c.Call(context.Background(), tool(base), "post", json.RawMessage(fmt.Sprintf(`{"path":"/orders","body":{"n":%d}}`, i)))
				switch {
				case err == nil:
				case connectortest.Kind(t, err) == connectors.KindOutcomeUnknown:
					lost = append(lost, fmt.Sprintf("call %d: %v", i, err))
				default:
					t.Fatalf("call %d: %v", i, err)
				}
			}
			t.Logf("idle limit %v: %d of %d calls lost, %d reached the server, %d connections", tc.idle, len(lost), calls, got.Load(), conns.Load())
			if tc.lost && len(lost) == 0 {
				t.Errorf("no call was lost: the test no longer reproduces the race it guards against")
			}
			if !tc.lost && len(lost) > 0 {
				t.Errorf("calls written into a connection as its server closed it:\n%v", lost)
			}
			if n := got.Load(); n != int64(calls-len(lost)) {
				t.Errorf("the server saw %d calls; %d succeeded", n, calls-len(lost))
			}
		})
	}
}
