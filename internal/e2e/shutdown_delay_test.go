package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// freshGet sends a GET (or HEAD) on a connection of its own, so that it
// proves the listener still accepts, and reads the answer whole. The
// request does not ask to close the connection: an answer that says
// Connection: close is the server's choice.
func freshGet(base, key, method, path string) (*http.Response, []byte, error) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	return getOn(&http.Client{Transport: tr, Timeout: 5 * time.Second}, base, key, method, path, nil)
}

// getOn sends a GET (or HEAD) with c and reads the answer whole; reused,
// if set, learns whether it went on a kept-alive connection.
func getOn(c *http.Client, base, key, method, path string, reused *bool) (*http.Response, []byte, error) {
	ctx := context.Background()
	if reused != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { *reused = i.Reused }})
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	if key != "" {
		req.Header.Set("X-API-KEY", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// short is the start of an answer's body, for a message.
func short(b []byte) string { return string(b[:min(len(b), 200)]) }

// TestShutdownDelay: on SIGTERM with QUIVER_SHUTDOWN_DELAY, /readyz turns
// 503 at once, so that a load balancer stops sending here, while for the
// delay new connections are still taken and served as ever (each answer
// closing its connection, so that its client reconnects through the
// balancer) and /healthz stays 200. Then the listener closes, the requests
// in flight drain, and the process exits 0. Before, the first signal
// closed the listener at once, and /readyz said 200 until then: requests
// the balancer sent meanwhile were refused.
func TestShutdownDelay(t *testing.T) {
	t.Parallel()
	const delay = time.Second
	env := map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_EGRESS_ALLOW_PRIVATE": "true",
		"QUIVER_SHUTDOWN_DELAY": delay.String()}
	key := createKey(t, env, "drain")
	tool := startToolServer(t)
	p := startProc(t, env)
	id := connectHTTPTool(t, p.URL, key, tool.URL)
	// A client's kept-alive connection, opened before the stop.
	kept := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer kept.Transport.(*http.Transport).CloseIdleConnections()
	if resp, b, err := getOn(kept, p.URL, "", "GET", "/readyz", nil); err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("/readyz before the stop: %v %v %s", resp, err, b)
	}

	sent := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	var body []byte
	testserver.Eventually(t, delay/2, "/readyz to answer 503", func() bool {
		resp, b, err := freshGet(p.URL, "", "GET", "/readyz")
		body = b
		return err == nil && resp.StatusCode == 503
	})
	r := &testserver.Response{Status: 503, Body: body}
	if m := r.JSON(); m["error"] != "unavailable" || m["message"] != "Not ready: shutting down." {
		t.Errorf("/readyz while stopping: %s, want unavailable, Not ready: shutting down.", body)
	}

	// A call that outlasts the delay, started during it, is answered: the
	// drain after the delay waits for it.
	slow := make(chan *testserver.Response, 1)
	go func() {
		slow <- testserver.Do(t, p.URL, key, "POST", callPath, map[string]any{"tool": id, "action": "get",
			"arguments": map[string]any{"path": "/slow", "query": map[string]any{"ms": "1500"}}})
	}()

	for _, c := range []struct {
		method, path, key string
		status            int
	}{
		{"HEAD", "/readyz", "", 503},
		{"GET", "/healthz", "", 200},
		{"GET", "/api/v1/agents/tools/available/", key, 200},
		{"GET", "/api/v1/agents/custom-tools/", key, 200},
	} {
		resp, b, err := freshGet(p.URL, c.key, c.method, c.path)
		if err != nil {
			t.Fatalf("%s %s during the delay (%v after the signal): %v", c.method, c.path, time.Since(sent), err)
		}
		if resp.StatusCode != c.status || !resp.Close || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s during the delay: %d (close %v, request ID %q) %s; want %d with Connection: close",
				c.method, c.path, resp.StatusCode, resp.Close, resp.Header.Get("X-Request-Id"), short(b), c.status)
		}
		if c.path == "/api/v1/agents/tools/available/" && !strings.Contains(string(b), `"tavily"`) {
			t.Errorf("the catalog during the delay: %s", b)
		}
	}
	// The kept-alive connection is not closed under its client: its next
	// request is served, and its answer ends it, so that the client's
	// next one goes through the load balancer again.
	var reused bool
	resp, b, err := getOn(kept, p.URL, key, "GET", "/api/v1/agents/tools/available/", &reused)
	if err != nil || resp.StatusCode != 200 || !reused || !resp.Close {
		t.Errorf("the catalog on a connection kept alive from before the stop: %v (reused %v) %v %s; want 200 with Connection: close", resp, reused, err, short(b))
	}
	testserver.Eventually(t, 5*time.Second, "the call started in the delay to reach the tool", func() bool { return tool.count("/slow") == 1 })

	select {
	case r := <-slow:
		if r.Status != 200 {
			t.Errorf("the call started in the delay: %d %s", r.Status, r.Body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call started in the delay got no answer")
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still running 20 s after the stop:\n%s", p.logText())
	}
	if took := time.Since(sent); took < delay {
		t.Errorf("serve exited %v after the signal, before the delay of %v was over", took, delay)
	}
	logs := p.logText()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0:\n%s", code, logs)
	}
	for _, line := range []string{`"msg":"shutting down: not ready (/readyz answers 503)`, `"delay":"1s"`,
		`"msg":"shutting down: no new connections; finishing the requests in flight"`, `"after_delay":"1s"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, line) {
			t.Errorf("the log lacks %s:\n%s", line, logs)
		}
	}
	if strings.Contains(logs, `"msg":"not ready"`) {
		t.Errorf("a probe of a stopping replica was logged as a warning:\n%s", grepLines(logs, `"not ready"`))
	}
}

// TestSecondSignalDuringShutdownDelay: a second signal during the delay
// ends the process at once, as it does during the drain.
func TestSecondSignalDuringShutdownDelay(t *testing.T) {
	t.Parallel()
	p := startProc(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_SHUTDOWN_DELAY": "1m"})
	p.cmd.Process.Signal(syscall.SIGTERM)
	testserver.Eventually(t, 5*time.Second, "/readyz to answer 503", func() bool {
		resp, _, err := freshGet(p.URL, "", "GET", "/readyz")
		return err == nil && resp.StatusCode == 503
	})
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		t.Fatalf("a second signal did not end the process during the delay:\n%s", p.logText())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(p.logText(), "a second signal: stopping at once") {
		t.Fatalf("exit code %d, want 1 and the second signal logged:\n%s", code, p.logText())
	}
}
