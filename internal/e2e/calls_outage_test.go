package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// A call whose outcome came back but could not be stored (the database went
// away before the commit) is unknown for everyone: no replica may replay a
// 200 the database never held. Before, the outcome went to Redis while the
// commit ran; another replica read it there, kept it in memory for the key's
// whole life, and replayed 200 while the first answered 504, then 409.
func TestUnstoredOutcomeIsNotReplayedByAnotherReplica(t *testing.T) {
	a, b, px := replicasAcrossAProxy(t, "unstoredx", "3s") // b loses the database
	tool := startToolServer(t)
	id := connectHTTPTool(t, a.URL, a.Key, tool.URL)
	body := callBody(id, "/slow/u?ms=1000", "once")

	first := make(chan *testserver.Response, 1)
	go func() {
		first <- testserver.Do(t, b.URL, b.Key, "POST", callPath, body, "Idempotency-Key", "k-unstored")
	}()
	testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return tool.count("/slow") == 1 })
	px.setCut(true) // the tool answers in a second; its outcome cannot be stored

	var seen []*testserver.Response
	ask := func() *testserver.Response {
		r := testserver.Do(t, a.URL, a.Key, "POST", callPath, body, "Idempotency-Key", "k-unstored")
		seen = append(seen, r)
		return r
	}
	time.Sleep(1500 * time.Millisecond) // the tool has answered; b retries the commit
	if r := ask(); r.Status != 409 || r.JSON()["error"] != "request_in_progress" {
		t.Errorf("another replica while the outcome is being stored: %d %s; want 409 request_in_progress", r.Status, r.Body)
	}
	r := <-first
	wantError(t, r, 504, "tool_outcome_unknown")
	if r := ask(); r.Status != 409 || r.JSON()["error"] != "tool_outcome_unknown" {
		t.Errorf("another replica after the 504: %d %s; want 409 tool_outcome_unknown", r.Status, r.Body)
	}
	px.setCut(false)
	testserver.Eventually(t, 10*time.Second, "the row to say outcome_unknown", func() bool {
		s := testserver.Do(t, a.URL, a.Key, "GET", "/api/v1/idempotency-keys/k-unstored", nil)
		return s.JSON()["state"] == "outcome_unknown"
	})
	for _, srv := range []*testserver.Server{a, b} {
		if r := testserver.Do(t, srv.URL, srv.Key, "POST", callPath, body, "Idempotency-Key", "k-unstored"); r.Status != 409 || r.JSON()["error"] != "tool_outcome_unknown" {
			t.Errorf("%s once the database is back: %d %s; want 409 tool_outcome_unknown", srv.URL, r.Status, r.Body)
		}
	}
	ask()
	for _, r := range seen {
		if r.Status == 200 {
			t.Fatalf("a replica replayed a 200 the database never held: %s", r.Body)
		}
	}
	// One call, one outcome_unknown, summed over the replicas: b could not
	// mark the row, and a's sweeper did.
	unknowns := func() (n float64) {
		for _, srv := range []*testserver.Server{a, b} {
			n += metricValue(t, srv, `quiver_calls_total{outcome="outcome_unknown"}`)
		}
		return n
	}
	testserver.Eventually(t, 5*time.Second, "a sweeper to count the call", func() bool { return unknowns() > 0 })
	time.Sleep(500 * time.Millisecond) // five more sweeps
	if n := unknowns(); n != 1 {
		t.Errorf("the replicas counted %v unknown outcomes for one call", n)
	}
	if n := tool.count("/slow"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// A Redis that stalls (connections open, nothing answers) costs one timeout
// now and then, not one per call: while it is marked down, calls neither
// read nor write it. Before, every first call waited for its cache write,
// half a second each.
func TestRedisStalledCostsOneTimeout(t *testing.T) {
	rs := startRedis(t)
	px := startProxy(t, rs.Addr)
	e := setupCalls(t, testserver.Options{Postgres: true, RedisURL: "redis://" + px.Addr() + "/0"})
	if r := e.call(callBody(e.id, "/warm", 0), "k-stall-warm"); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	px.freeze(true)
	const n = 8
	start := time.Now()
	for i := range n {
		if r := e.call(callBody(e.id, fmt.Sprintf("/stall%d", i), i), fmt.Sprintf("k-stall-%d", i)); r.Status != 200 {
			t.Fatalf("call %d with Redis stalled: %d %s", i, r.Status, r.Body)
		}
	}
	// Each cache operation gives up after 0.5 s; per call that was 4 s.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("%d first calls took %v with Redis stalled; want a timeout now and then, not one per call", n, took)
	}
	px.freeze(false)
	for i := range n {
		r := e.call(callBody(e.id, fmt.Sprintf("/stall%d", i), i), fmt.Sprintf("k-stall-%d", i))
		if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d once Redis is back: %d %s", i, r.Status, r.Body)
		}
		if c := e.tool.count(fmt.Sprintf("/stall%d", i)); c != 1 {
			t.Fatalf("call %d ran %d times", i, c)
		}
	}
}

// A call log batch the database refuses is written once it is back. Before,
// the batch was logged as failed and thrown away: a call that ran was
// missing from the log for good.
func TestCallLogSurvivesADatabaseOutage(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "logoutage")
	e := setupCalls(t, testserver.Options{DatabaseURL: dbURL})
	get := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/logged"}}
	if r := e.call(get); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	// A keyless call's log entry waits in a batch for up to 100 ms: the
	// database goes away as soon as it is answered, before the batch is
	// written (but for a flush in that moment, which proves nothing and
	// fails nothing), and the entry waits for it.
	r := e.call(get)
	px.setCut(true)
	if r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	callID := r.JSON()["call_id"]
	time.Sleep(500 * time.Millisecond) // several flushes fail meanwhile
	px.setCut(false)
	testserver.Eventually(t, 10*time.Second, "the call in the log", func() bool {
		r := e.srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", e.id), nil)
		calls, _ := r.JSON()["calls"].([]any)
		for _, c := range calls {
			if c.(map[string]any)["call_id"] == callID {
				return true
			}
		}
		return false
	})
}

// TestKeylessCallRefusedWhileTheDatabaseIsDown: with Postgres gone, a call
// without a key is 503 unavailable and nothing is dispatched (API.md), even
// though its API key and tool are in the replica's caches: the replica sees
// its own watching session end. Before, such a call ran for as long as the
// caches held (QUIVER_CACHE_TTL). Once the database is back, calls run again.
// So too with a database that stops answering (frozen), which ends nothing.
func TestKeylessCallRefusedWhileTheDatabaseIsDown(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "keylessdown")
	e := setupCalls(t, testserver.Options{DatabaseURL: dbURL, Env: map[string]string{"QUIVER_CACHE_TTL": "30s"}})
	get := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/down"}}
	if r := e.call(get); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	// refused checks that, with the database gone as gone says, calls are
	// refused within within, and then that nothing is dispatched.
	refused := func(how string, within time.Duration) {
		t.Helper()
		testserver.Eventually(t, within, "calls refused with the database "+how, func() bool {
			return e.call(get).Status == 503
		})
		ran := e.tool.total.Load()
		for i := range 3 {
			r := e.call(get)
			wantError(t, r, 503, "unavailable")
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("call %d with the database %s: 503 without Retry-After", i, how)
			}
		}
		if n := e.tool.total.Load(); n != ran {
			t.Fatalf("the tool was called %d times with the database %s", n-ran, how)
		}
	}
	running := func() {
		t.Helper()
		testserver.Eventually(t, 10*time.Second, "calls running again", func() bool {
			return e.call(get).Status == 200
		})
	}

	px.setCut(true)
	refused("down", time.Second) // the replica sees its session end
	px.setCut(false)
	running()

	// A database that stops answering without ending anything is seen
	// when the watching session's probe goes unanswered.
	px.freeze(true)
	refused("stalled", 10*time.Second)
	px.freeze(false)
	running()
}

// A database that stalls with its connections open (nothing answers, nothing
// is refused) ends each request that waits on it with 503 within the request
// bound: the call's lease and ten seconds. Before, such requests hung for as
// long as the stall lasted.
func TestStalledDatabaseEndsRequests(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "pgstall")
	e := setupCalls(t, testserver.Options{DatabaseURL: dbURL, Env: map[string]string{"QUIVER_CALL_TIMEOUT": "1s", "QUIVER_LEASE_GRACE": "1s"}})
	px.freeze(true)
	time.Sleep(1200 * time.Millisecond) // the API key's cache entry runs out
	type answer struct {
		what string
		r    *testserver.Response
		took time.Duration
	}
	answers := make(chan answer, 2)
	ask := func(what string, do func() *testserver.Response) {
		start := time.Now()
		r := do()
		answers <- answer{what, r, time.Since(start)}
	}
	go ask("a list", func() *testserver.Response { return e.srv.Do("GET", "/api/v1/agents/", nil) })
	go ask("a keyed call", func() *testserver.Response { return e.call(callBody(e.id, "/stalled", 1), "k-stalled") })
	for range 2 {
		select {
		case a := <-answers:
			if a.r.Status != 503 || a.r.JSON()["error"] != "unavailable" {
				t.Errorf("%s with the database stalled: %d %s; want 503 unavailable", a.what, a.r.Status, a.r.Body)
			}
			t.Logf("%s answered in %v", a.what, a.took.Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatal("a request was still waiting on the stalled database after 30 s; the bound is 12 s")
		}
	}
	px.freeze(false)
	if n := e.tool.count("/stalled"); n != 0 {
		t.Fatalf("the call ran %d times although nothing could be reserved", n)
	}
}

// A keyless call that timed out is told so without a word about a key it
// never had.
func TestKeylessUnknownOutcomeNamesNoKey(t *testing.T) {
	e := setupCalls(t, testserver.Options{})
	r := e.call(map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/hang"}})
	wantError(t, r, 504, "tool_outcome_unknown")
	if msg, _ := r.JSON()["message"].(string); strings.Contains(msg, "key") {
		t.Fatalf("a keyless call's answer speaks of a key: %q", msg)
	}
	keyed := e.call(callBody(e.id, "/hang", 1), "k-hang")
	wantError(t, keyed, 504, "tool_outcome_unknown")
	if msg, _ := keyed.JSON()["message"].(string); !strings.Contains(msg, "not be run again for this key") {
		t.Fatalf("a keyed call's answer: %q", msg)
	}
}

// A keyed call whose outcome was stored is in the call log even if its
// replica dies a moment after answering: the entry is written with the
// outcome. Before, it waited in memory for the next batch (up to 100 ms),
// and a kill -9 lost it.
func TestKeyedCallLoggedDespiteACrash(t *testing.T) {
	env := procEnv(t, testdb.Postgres(t, "logcrash"), "")
	key := createKey(t, env, "logcrash")
	tool := startToolServer(t)
	a := startProc(t, env)
	id := connectHTTPTool(t, a.URL, key, tool.URL)
	var ids []any
	for i := range 5 {
		r := testserver.Do(t, a.URL, key, "POST", callPath, callBody(id, "/crash", i), "Idempotency-Key", fmt.Sprintf("k-crash-%d", i))
		if r.Status != 200 {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, r.JSON()["call_id"])
	}
	a.kill()
	b := startProc(t, env)
	r := testserver.Do(t, b.URL, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", id), nil)
	logged := map[any]bool{}
	calls, _ := r.JSON()["calls"].([]any)
	for _, c := range calls {
		logged[c.(map[string]any)["call_id"]] = true
	}
	for i, callID := range ids {
		if !logged[callID] {
			t.Errorf("call %d (%v) answered 200, then its replica died: it is missing from the log", i, callID)
		}
	}
}

// metricValue is a sample's value on srv's /metrics, 0 when absent.
func metricValue(t *testing.T, srv *testserver.Server, sample string) float64 {
	t.Helper()
	for _, l := range strings.Split(string(srv.Do("GET", "/metrics", nil).Body), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return 0
}

// A Complete that committed but whose answer was lost, with the database
// then away until the lease ends: the replica cannot know the outcome and
// answers 504, but the row holds the call's 200. The replay cache must not
// say otherwise: every replica then answers from the row, 200. Before, the
// replica put outcome_unknown in Redis, and other replicas answered 409
// tool_outcome_unknown while the row (and any replica that had read it)
// said succeeded.
func TestLostCommitAnswerLeavesTheRowInCharge(t *testing.T) {
	a, b, px := replicasAcrossAProxy(t, "lostcommit", "2s")
	tool := startToolServer(t)
	id := connectHTTPTool(t, a.URL, a.Key, tool.URL)
	// The tool echoes its path, so the marker is among the completing
	// statement's parameters and nowhere in the reservation's.
	const marker = "MARK-5e1f9c"
	body := callBody(id, "/slow/"+marker+"?ms=200", 1)
	fired := px.swallowAfter([]byte(marker))
	first := make(chan *testserver.Response, 1)
	go func() {
		first <- testserver.Do(t, b.URL, b.Key, "POST", callPath, body, "Idempotency-Key", "k-lostcommit")
	}()
	select {
	case <-fired:
		px.setCut(true) // the commit went through; its answer and the database are gone
	case <-time.After(10 * time.Second):
		t.Fatal("the completing statement never went through the proxy")
	}
	wantError(t, <-first, 504, "tool_outcome_unknown")
	if r := testserver.Do(t, a.URL, a.Key, "POST", callPath, body, "Idempotency-Key", "k-lostcommit"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("another replica: %d %s; want the row's 200, replayed", r.Status, r.Body)
	}
	px.swallowAfter(nil)
	px.setCut(false)
	testserver.Eventually(t, 10*time.Second, "the first replica to replay the row", func() bool {
		r := testserver.Do(t, b.URL, b.Key, "POST", callPath, body, "Idempotency-Key", "k-lostcommit")
		return r.Status == 200 && r.Header.Get("Idempotent-Replayed") == "true"
	})
	if s := testserver.Do(t, a.URL, a.Key, "GET", "/api/v1/idempotency-keys/k-lostcommit", nil); s.JSON()["state"] != "succeeded" {
		t.Errorf("the key: %s", s.Body)
	}
	if n := tool.count("/slow"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// replicasAcrossAProxy starts two replicas of one database and one Redis
// (with one key prefix): a reaches the database directly, b through a proxy
// the test controls. The call timeout is callTimeout, the lease grace 1s.
func replicasAcrossAProxy(t *testing.T, name, callTimeout string) (a, b *testserver.Server, px *tcpProxy) {
	t.Helper()
	direct, proxied, px := postgresWithProxy(t, name)
	rs := startRedis(t)
	env := map[string]string{
		"QUIVER_CALL_TIMEOUT": callTimeout, "QUIVER_LEASE_GRACE": "1s",
		"QUIVER_REDIS_PREFIX": fmt.Sprintf("quivertest:%s:%d:", name, time.Now().UnixNano()),
	}
	redisURL := "redis://" + rs.Addr + "/0"
	b = testserver.Start(t, testserver.Options{DatabaseURL: proxied, RedisURL: redisURL, Env: env})
	a = testserver.Start(t, testserver.Options{DatabaseURL: direct, RedisURL: redisURL, Env: env})
	return a, b, px
}

// TestRejectionReleasedOnceTheDatabaseIsBack: a keyed call that the tool's
// server refuses before running anything (a 401) finds the database away
// when it releases its key. The release is tried again while the lease
// lasts: once the database is back the key is free, a retry runs the call,
// and the log holds the refusal once. Before, one failed release left the
// key reserved, to end as tool_outcome_unknown for a call that never ran.
func TestRejectionReleasedOnceTheDatabaseIsBack(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "rejectrelease")
	// A lease of 10 s, so the database can be away for a while within it.
	srv := testserver.Start(t, testserver.Options{DatabaseURL: dbURL,
		Env: map[string]string{"QUIVER_CALL_TIMEOUT": "5s", "QUIVER_LEASE_GRACE": "5s"}})
	var refuse atomic.Bool
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if refuse.Load() && bytes.Contains(body, []byte(`"tools/call"`)) {
				px.setCut(true) // the database goes away as the refusal comes back
				http.Error(w, "token revoked", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	id := mqConnect(t, srv, "refusing", map[string]any{"url": counter.URL})
	if r := mqCall(srv, id, "increment", nil, "k-warm"); r.Status != 200 { // the tool resolved and its session open
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}

	const key = "k-refused-4b7e"
	refuse.Store(true)
	r := mqCall(srv, id, "increment", nil, key)
	refuse.Store(false)
	mqWant(t, r, 502, "upstream_auth_failed")
	time.Sleep(1500 * time.Millisecond) // the first release fails, and its first retry
	px.setCut(false)

	deadline := time.Now().Add(6 * time.Second) // within the lease
	for {
		r = mqCall(srv, id, "increment", nil, key)
		if r.Status == 200 {
			break
		}
		if !(r.Status == 503 || r.Status == 409 && r.JSON()["error"] == "request_in_progress") || time.Now().After(deadline) {
			t.Fatalf("retry: %d %s, want 200 once the database is back", r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := counter.Calls("increment"); n != 2 { // the warm-up and the retry
		t.Fatalf("increment ran %d times, want 2", n)
	}
	r = srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", id), nil)
	outcomes := map[string]int{}
	for _, c := range r.JSON()["calls"].([]any) {
		if m := c.(map[string]any); m["idempotency_key"] == key {
			outcomes[m["outcome"].(string)]++
		}
	}
	if outcomes["rejected"] != 1 || outcomes["succeeded"] != 1 || len(outcomes) != 2 {
		t.Fatalf("the key's log entries by outcome: %v, want one rejected and one succeeded", outcomes)
	}
}
