package httpserver_test

import (
	"testing"
)

// After CloseAfterEachAnswer the server still accepts and answers, but
// every answer says Connection: close and ends its connection, so that
// clients reconnect (through a load balancer that then picks another
// replica). An idle keep-alive connection is not closed under its client:
// its next request is answered, and then it closes.
func TestCloseAfterEachAnswer(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	busy, idle := dial(t, ts.addr), dial(t, ts.addr)
	for _, rc := range []*rawConn{busy, idle} {
		rc.send(get)
		if resp, body := rc.read("GET"); resp.Close || body != "/" {
			t.Fatalf("before: body %q, close %v", body, resp.Close)
		}
	}

	ts.srv.CloseAfterEachAnswer()
	busy.send(get)
	if resp, body := busy.read("GET"); !resp.Close || body != "/" {
		t.Fatalf("a kept-alive connection's next answer: body %q, close %v; want Connection: close", body, resp.Close)
	}
	busy.expectClosed()

	fresh := dial(t, ts.addr)
	fresh.send("GET /fresh HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := fresh.read("GET"); !resp.Close || body != "/fresh" {
		t.Fatalf("a new connection's answer: body %q, close %v; want it served, with Connection: close", body, resp.Close)
	}
	fresh.expectClosed()

	idle.send("GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := idle.read("GET"); !resp.Close || body != "/idle" {
		t.Fatalf("the idle connection's next answer: body %q, close %v; want it served, with Connection: close", body, resp.Close)
	}
	idle.expectClosed()
	select {
	case err := <-ts.served:
		t.Fatalf("Serve returned %v: the server stopped accepting", err)
	default:
	}
}
