package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestSignals: the first SIGTERM lets a call in flight finish and then
// stops the server cleanly; a second one ends the process at once, as an
// operator who does not want to wait out the drain expects (it used to be
// ignored). SIGHUP drains as SIGTERM does.
func TestSignals(t *testing.T) {
	env := map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_EGRESS_ALLOW_PRIVATE": "true"}
	key := createKey(t, env, "signals")
	tool := startToolServer(t)
	slow := func(p *proc, id int64, ms string) <-chan *testserver.Response {
		done := make(chan *testserver.Response, 1)
		go func() {
			done <- testserver.Do(t, p.URL, key, "POST", callPath, map[string]any{"tool": id, "action": "get",
				"arguments": map[string]any{"path": "/slow", "query": map[string]any{"ms": ms}}})
		}()
		return done
	}
	// answered waits for a call slow started; one that gets no answer (the
	// process died under it) fails the test rather than hang it.
	answered := func(done <-chan *testserver.Response, what string) *testserver.Response {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", what)
			return nil
		}
	}
	exited := func(p *proc, within time.Duration) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(within):
			return false
		}
	}

	p := startProc(t, env)
	id := connectHTTPTool(t, p.URL, key, tool.URL)
	// drains starts a call on p, the nth to reach the tool, sends sig, and
	// wants the call answered and the process out with 0.
	drains := func(p *proc, sig syscall.Signal, nth int) {
		t.Helper()
		done := slow(p, id, "1500")
		testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return tool.count("/slow") == nth })
		p.cmd.Process.Signal(sig)
		if r := answered(done, "the call in flight at "+sig.String()); r.Status != 200 {
			t.Fatalf("the call in flight at %v: %d %s", sig, r.Status, r.Body)
		}
		if !exited(p, 5*time.Second) || p.cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("after the drain on %v: exited %v, state %v", sig, p.cmd.ProcessState != nil, p.cmd.ProcessState)
		}
	}
	drains(p, syscall.SIGTERM, 1)

	// hang starts a call of 20 s on p, the nth to reach the tool, and
	// waits until it has.
	hang := func(p *proc, nth int) {
		go func() {
			// Not testserver.Do: this call is cut off with the process.
			body := fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":"/slow","query":{"ms":"20000"}}}`, id)
			req, _ := http.NewRequest("POST", p.URL+callPath, strings.NewReader(body))
			req.Header.Set("X-API-KEY", key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return tool.count("/slow") == nth })
	}

	p = startProc(t, env)
	hang(p, 2)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if exited(p, 500*time.Millisecond) {
		t.Fatal("the first signal did not wait for the call in flight")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if !exited(p, 3*time.Second) {
		t.Fatal("a second signal did not end the process")
	}
	if logs := p.logText(); !strings.Contains(logs, "a second signal: stopping at once") {
		t.Errorf("the second signal was not logged:\n%s", logs)
	}

	// Two signals sent back to back: the second is not lost while the
	// first is handled (it was, every time). Two different ones, as the
	// kernel merges a signal sent while the same one is still pending.
	p = startProc(t, env)
	hang(p, 3)
	p.cmd.Process.Signal(syscall.SIGINT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if !exited(p, 3*time.Second) {
		t.Fatal("two signals back to back did not end the process at once")
	}

	// SIGHUP (the terminal closed) drains as SIGTERM does; Go's default
	// for it ended the process at once, cutting the call off.
	drains(startProc(t, env), syscall.SIGHUP, 4)
}

// A SIGTERM while serve waits for a database that does not answer (a host
// that drops packets, here a listener that never speaks) stops it at once,
// cleanly: GORM's ping at open used to hold it, deaf to the signal, for as
// long as the connection lasted.
func TestSignalWhileTheDatabaseDoesNotAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connected := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected <- c // held open, never answered
		}
	}()
	defer func() {
		for len(connected) > 0 {
			(<-connected).Close()
		}
	}()

	p, _ := launchProc(t, map[string]string{
		"DATABASE_URL":      "postgres://quiver@" + ln.Addr().String() + "/quiver",
		"QUIVER_SECRET_KEY": testserver.TestSecretKey,
	}, quiverBinary(t), "serve")
	select {
	case c := <-connected:
		connected <- c
	case <-time.After(10 * time.Second):
		t.Fatal("serve never connected to the database")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
		t.Fatalf("serve did not stop within 5 s of SIGTERM:\n%s", p.logText())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(p.logText(), "stopped by a signal before serving") {
		t.Fatalf("exit code %d, want 0 and the stop logged:\n%s", code, p.logText())
	}
}

// A stop while the database stalls waits for the requests held by the
// stall to end by their own bound (503 unavailable) and exits 0: the drain
// outlasts every request's bound. It used to be the call timeout and five
// seconds, shorter than a request's bound, so such a stop cut the requests
// off and exited 1.
func TestSignalDuringADatabaseStall(t *testing.T) {
	t.Parallel()
	dbURL, px := postgresBehindProxy(t, "sigstall")
	env := map[string]string{"DATABASE_URL": dbURL, "QUIVER_SECRET_KEY": testserver.TestSecretKey,
		"QUIVER_CALL_TIMEOUT": "1s", "QUIVER_LEASE_GRACE": "1s"} // a request's bound: 12 s
	key := createKey(t, env, "sigstall")
	p := startProc(t, env)
	px.freeze(true)
	time.Sleep(1200 * time.Millisecond) // the API key's cache entry runs out
	done := make(chan *testserver.Response, 1)
	go func() { done <- testserver.Do(t, p.URL, key, "GET", "/api/v1/agents/", nil) }()
	time.Sleep(200 * time.Millisecond) // the request waits on the database
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case r := <-done:
		if r.Status != 503 || r.JSON()["error"] != "unavailable" {
			t.Errorf("the request held by the stall: %d %s, want 503 unavailable", r.Status, r.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the stop; the bound is 12 s")
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still running 10 s after the last request ended:\n%s", p.logText())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0:\n%s", code, p.logText())
	}
	px.freeze(false)
}
