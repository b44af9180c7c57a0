package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMetricsMethodLabel: a method HTTP does not define is counted as
// OTHER, so clients inventing methods cannot add series without bound.
func TestMetricsMethodLabel(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for _, m := range []string{"M1234", "FROB", "GET"} {
		req, _ := http.NewRequest(m, srv.URL+"/nowhere", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	r := srv.Do("GET", "/metrics", nil)
	body := string(r.Body)
	if strings.Contains(body, `method="M1234"`) || strings.Contains(body, `method="FROB"`) || !strings.Contains(body, `method="OTHER"`) {
		t.Fatalf("method labels:\n%s", grepLines(body, "quiver_http_requests_total"))
	}
}

// TestReadyzNamesWhatIsDown: /readyz answers 503 naming each dependency that
// does not answer, without the driver's details (it needs no key).
func TestReadyzNamesWhatIsDown(t *testing.T) {
	dbURL, pg := postgresBehindProxy(t, "readyz")
	rd := startProxy(t, testdb.RedisAddr())
	srv := testserver.Start(t, testserver.Options{DatabaseURL: dbURL, RedisURL: "redis://" + rd.Addr() + "/0"})

	ready := func() *testserver.Response { return testserver.Do(t, srv.URL, "", "GET", "/readyz", nil) }
	if r := ready(); r.Status != 200 {
		t.Fatalf("ready: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		db, redis bool // cut
		want      string
	}{
		{true, false, "Not ready: the database does not answer."},
		{false, true, "Not ready: Redis does not answer."},
		{true, true, "Not ready: the database and Redis do not answer."},
	} {
		pg.setCut(tc.db)
		rd.setCut(tc.redis)
		// A connection the cut broke may fail one more check after it heals.
		var r *testserver.Response
		testserver.Eventually(t, 10*time.Second, tc.want, func() bool {
			r = ready()
			return r.Status == 503 && r.JSON()["error"] == "unavailable" && r.JSON()["message"] == tc.want
		})
		if strings.Contains(string(r.Body), "127.0.0.1") || strings.Contains(string(r.Body), "postgres") {
			t.Errorf("the answer has the driver's details: %s", r.Body)
		}
	}
	pg.setCut(false)
	rd.setCut(false)
	testserver.Eventually(t, 10*time.Second, "ready again", func() bool { return ready().Status == 200 })
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Every dispatched call is in the first-call latency histogram, whatever
// its outcome: before, only calls whose outcome came back were, so the
// slowest (those that timed out) were missing from it.
func TestMetricsTimeEveryOutcome(t *testing.T) {
	e := setupCalls(t, testserver.Options{})
	// A fresh server already shows every call series, at zero (they used
	// to appear with their first event).
	fresh := string(e.srv.Do("GET", "/metrics", nil).Body)
	for _, series := range []string{`quiver_calls_total{outcome="rejected"} 0`, `quiver_call_conflicts_total{kind="request_in_progress"} 0`,
		`quiver_call_duration_seconds_count{phase="replay"} 0`} {
		if !strings.Contains(fresh, series+"\n") {
			t.Errorf("a fresh server lacks %s", series)
		}
	}
	for i, path := range []string{"/ok", "/fail", "/drop", "/hang"} {
		e.call(callBody(e.id, path, i), fmt.Sprintf("k-metrics-%d", i))
	}
	body := string(e.srv.Do("GET", "/metrics", nil).Body)
	var calls, timed float64
	for _, l := range strings.Split(body, "\n") {
		name, value, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		switch {
		case err != nil:
		case strings.HasPrefix(name, "quiver_calls_total{"):
			calls += v
		case name == `quiver_call_duration_seconds_count{phase="first"}`:
			timed = v
		}
	}
	if calls != 4 || timed != calls {
		t.Fatalf("%v calls counted, %v timed; want 4 and 4:\n%s\n%s", calls, timed,
			grepLines(body, "quiver_calls_total"), grepLines(body, "quiver_call_duration_seconds_count"))
	}
}

// A request the HTTP server refuses before routing (here, a bad escape in
// its target) is logged with the request ID its answer carries, and
// counted, under one route whatever it named.
func TestRefusedRequestsAreLoggedAndCounted(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /%ZZ HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 400 || id == "" {
		t.Fatalf("status %d, X-Request-Id %q", resp.StatusCode, id)
	}
	logged := false
	for _, line := range strings.Split(srv.LogText(), "\n") {
		logged = logged || strings.Contains(line, id) && strings.Contains(line, "request refused before routing")
	}
	if !logged {
		t.Errorf("no log line of the refusal with request_id %s:\n%s", id, srv.LogText())
	}
	body := string(srv.Do("GET", "/metrics", nil).Body)
	if !strings.Contains(body, `quiver_http_requests_total{method="OTHER",route="refused",status="400"} 1`) {
		t.Errorf("the refusal is not counted:\n%s", grepLines(body, "quiver_http_requests_total"))
	}
}
