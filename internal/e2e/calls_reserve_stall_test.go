package e2e

import (
	"context"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReserveAnswerLostDatabaseAway: the insert that reserves a key is
// written but its answer lost, and the database then stays away for longer
// than the call waits to release the row. The release is tried again off
// the request: the database back within the lease, the key is free and the
// retry runs the call. It used to be tried once, so the row was left to
// answer request_in_progress, then tool_outcome_unknown, for a tool that
// never ran, after a 503 that said nothing was run.
func TestReserveAnswerLostDatabaseAway(t *testing.T) {
	t.Parallel()
	dbURL, px := postgresBehindProxy(t, "pgreserveaway")
	// A lease of 20 s, so the database can be away for seconds within it.
	e := setupCalls(t, testserver.Options{DatabaseURL: dbURL,
		Env: map[string]string{"QUIVER_CALL_TIMEOUT": "15s", "QUIVER_LEASE_GRACE": "5s"}})
	if r := e.call(callBody(e.id, "/warm", 1), "k-warm"); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}

	const key = "k-away-5d1e08"
	fired := px.swallowAfter([]byte(key))
	go func() {
		<-fired
		px.setCut(true) // and the database goes away with the answer
	}()
	r := e.call(callBody(e.id, "/away", 1), key)
	px.swallowAfter(nil)
	wantError(t, r, 503, "unavailable")
	time.Sleep(3 * time.Second) // away longer than the release first waits (2 s)
	px.setCut(false)

	deadline := time.Now().Add(10 * time.Second) // within the lease
	for {
		r = e.call(callBody(e.id, "/away", 1), key)
		if r.Status == 200 {
			break
		}
		if !(r.Status == 503 || r.Status == 409 && r.JSON()["error"] == "request_in_progress") || time.Now().After(deadline) {
			t.Fatalf("retry: %d %s, want 200 once the database is back", r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := e.tool.count("/away"); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// TestReservationInAStall: a keyed call whose reservation meets a database
// that stalls answers 503 in time to release what it may have written and
// well within its request's bound, and a stop meanwhile waits for that
// answer and exits 0. Reserve used to wait for the whole bound and the
// release two seconds more, past the drain: the stop cut the call off and
// exited 1.
func TestReservationInAStall(t *testing.T) {
	t.Parallel()
	dbURL, px := postgresBehindProxy(t, "pgreservestall")
	env := map[string]string{"DATABASE_URL": dbURL, "QUIVER_SECRET_KEY": testserver.TestSecretKey,
		"QUIVER_EGRESS_ALLOW_PRIVATE": "true", "QUIVER_DATA_DIR": t.TempDir(),
		"QUIVER_CALL_TIMEOUT": "3s", "QUIVER_LEASE_GRACE": "2s"} // a lease of 5 s, a request's bound of 15 s
	key := createKey(t, env, "pgreservestall")
	tool := startToolServer(t)
	p := startProc(t, env)
	id := connectHTTPTool(t, p.URL, key, tool.URL)
	call := func(idem string) *testserver.Response {
		return testserver.Do(t, p.URL, key, "POST", callPath, callBody(id, "/"+idem, 1), "Idempotency-Key", idem)
	}
	if r := call("k-warm"); r.Status != 200 { // the API key and the tool cached
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}

	px.freeze(true)
	defer px.freeze(false)
	start := time.Now()
	done := make(chan *testserver.Response, 1)
	go func() { done <- call("k-stall") }()
	time.Sleep(500 * time.Millisecond) // the reservation waits on the database
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case r := <-done:
		wantError(t, r, 503, "unavailable")
		// Reserve's bound (half the lease) and the release's 2 s.
		if took := time.Since(start); took > 7*time.Second {
			t.Errorf("answered after %v; the reservation waits half the lease (2.5 s) and the release 2 s", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the stop; the bound is 15 s")
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still running 20 s after the request ended:\n%s", p.logText())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0:\n%s", code, p.logText())
	}
	if n := tool.count("/k-stall"); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestKeyLockedForAnotherBody: a request holds a key's lock in Redis but has
// not reserved the key (its database stalls); another replica's request
// with a different body under the same key is not idempotency_key_reused,
// which only a row can say: it reserves the key and runs. It used to get
// 409 idempotency_key_reused for as long as the lock lasted (a lease),
// whether or not the first request ever reserved the key.
func TestKeyLockedForAnotherBody(t *testing.T) {
	t.Parallel()
	rs := startRedis(t)
	direct, proxied, px := postgresWithProxy(t, "lockedother")
	shared := procEnv(t, direct, "redis://"+rs.Addr+"/0") // one Redis prefix for both
	shared["QUIVER_CALL_TIMEOUT"], shared["QUIVER_LEASE_GRACE"] = "5s", "5s"
	envFor := func(dbURL string) map[string]string {
		env := maps.Clone(shared)
		env["DATABASE_URL"] = dbURL
		return env
	}
	key := createKey(t, envFor(direct), "lockedother")
	tool := startToolServer(t)
	stalled, other := startProc(t, envFor(proxied)), startProc(t, envFor(direct))
	id := connectHTTPTool(t, other.URL, key, tool.URL)
	call := func(p *proc, path string) *testserver.Response {
		return testserver.Do(t, p.URL, key, "POST", callPath, callBody(id, path, 1), "Idempotency-Key", "k-locked")
	}
	if r := testserver.Do(t, stalled.URL, key, "POST", callPath, callBody(id, "/warm", 1), "Idempotency-Key", "k-warm"); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}

	px.freeze(true)
	defer px.freeze(false)
	first := make(chan *testserver.Response, 1)
	go func() { first <- call(stalled, "/first") }()
	time.Sleep(500 * time.Millisecond) // it holds the lock, and waits on the database to reserve
	if r := call(other, "/second"); r.Status != 200 {
		t.Fatalf("another body under the key, with nothing reserved: %d %s, want 200", r.Status, r.Body)
	}
	if r := <-first; !(r.Status == 503 || r.Status == 409 && r.JSON()["error"] == "idempotency_key_reused") {
		t.Errorf("the stalled request: %d %s, want 503 or 409 idempotency_key_reused", r.Status, r.Body)
	}
	if n, m := tool.count("/first"), tool.count("/second"); n != 0 || m != 1 {
		t.Fatalf("the tool ran /first %d and /second %d times, want 0 and 1", n, m)
	}
}

// TestReserveInsertOutlivesItsBound: the insert that reserves a key runs
// past the reservation's bound (a commit waiting on a slow disk or on a
// synchronous standby, which a cancel does not stop) and commits after the
// call answered 503 and found no row to release. The release is tried
// again until the lease ends, so the key ends free, not burned. It used to
// stop at the first answer from the database, and the row committed after
// it was swept to outcome_unknown.
func TestReserveInsertOutlivesItsBound(t *testing.T) {
	t.Parallel()
	// A lease of 14 s: the reservation waits 7 s; the insert's row is in
	// place at once (a retry waits on it) and commits after 8 s; releases
	// are tried until 3 s before the lease ends.
	e := setupCalls(t, testserver.Options{Postgres: true,
		Env: map[string]string{"QUIVER_CALL_TIMEOUT": "12s", "QUIVER_LEASE_GRACE": "2s"}})
	if r := e.call(callBody(e.id, "/warm", 1), "k-warm"); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	db := e.srv.App.Store.DB()
	for _, stmt := range []string{`CREATE SEQUENCE test_slow_once`, // once: not for the retries
		`CREATE FUNCTION test_slow_insert() RETURNS trigger AS $$
		DECLARE until timestamptz := clock_timestamp() + interval '8 seconds';
		BEGIN
			IF NEW.key = 'k-slow-insert' AND nextval('test_slow_once') = 1 THEN
				WHILE clock_timestamp() < until LOOP
					BEGIN PERFORM pg_sleep(0.1); EXCEPTION WHEN query_canceled THEN NULL; END;
				END LOOP;
			END IF;
			RETURN NEW;
		END $$ LANGUAGE plpgsql`,
		`CREATE TRIGGER test_slow_insert AFTER INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION test_slow_insert()`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}

	wantError(t, e.call(callBody(e.id, "/slow-insert", 1), "k-slow-insert"), 503, "unavailable")
	var r *testserver.Response
	testserver.Eventually(t, 15*time.Second, "the key to be released", func() bool {
		r = e.call(callBody(e.id, "/slow-insert", 1), "k-slow-insert")
		if r.Status != 200 && r.Status != 503 && !(r.Status == 409 && r.JSON()["error"] == "request_in_progress") {
			t.Fatalf("retry: %d %s, want 200 once the key is released", r.Status, r.Body)
		}
		return r.Status == 200
	})
	if n := e.tool.count("/slow-insert"); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// TestAgentCallCancelledWhileReserving: an agent's MCP client gives up on a
// tools/call (the SDK then sends notifications/cancelled) while its key's
// insert has not committed. The call ends one way or the other: here it
// runs, as a REST call whose client left does, and the retry replays it;
// the key never ends as outcome_unknown for a tool that did not run. (The
// reservation is not cancelled with the request in any case, see
// reserving; the agent endpoint's fast path does not cancel it today.)
func TestAgentCallCancelledWhileReserving(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{Postgres: true,
		Env: map[string]string{"QUIVER_CALL_TIMEOUT": "8s", "QUIVER_LEASE_GRACE": "2s"}}) // a lease of 10 s
	f := mqrSetup(t, srv, srv.Key)
	db := srv.App.Store.DB()
	for _, stmt := range []string{`CREATE SEQUENCE test_cancel_once`,
		`CREATE FUNCTION test_slow_commit() RETURNS trigger AS $$
		DECLARE until timestamptz := clock_timestamp() + interval '2 seconds';
		BEGIN
			IF NEW.key = 'k-cancel' AND nextval('test_cancel_once') = 1 THEN
				WHILE clock_timestamp() < until LOOP
					BEGIN PERFORM pg_sleep(0.1); EXCEPTION WHEN query_canceled THEN NULL; END;
				END LOOP;
			END IF;
			RETURN NEW;
		END $$ LANGUAGE plpgsql`,
		`CREATE TRIGGER test_slow_commit AFTER INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION test_slow_commit()`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}

	args := map[string]any{"to": "a", "idempotency_key": "k-cancel"}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "t__send", Arguments: args}); err == nil {
		t.Fatalf("the call answered before its client gave up: %+v", res)
	}
	var res *mcp.CallToolResult
	testserver.Eventually(t, 15*time.Second, "the key to hold an outcome", func() bool {
		var err error
		if res, err = f.call(t, "t__send", args); err != nil {
			t.Fatal(err)
		}
		return !res.IsError || !strings.Contains(mqText(t, res), "request_in_progress")
	})
	if res.IsError || res.Meta["quiver/replayed"] != true {
		t.Fatalf("the retry: %+v (%s), want the replay of the call that went on", res, mqText(t, res))
	}
	if n := len(f.up.ran()); n != 1 {
		t.Fatalf("the upstream ran %d times, want 1", n)
	}
}
