package e2e

import (
	"net/http"
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
