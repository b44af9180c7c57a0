package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// Custom MCP servers through the REST API, in the cases mcp_test.go leaves
// out: stateless servers, the seed-003-like inbox, refusals on configure
// with the server's own words, and a key released by a server's JSON-RPC
// refusal. Helpers start with mcv and take the (sub)test's t, so a failure
// is reported where it happened.

// mcvDo sends a request with the server's key on behalf of t.
func mcvDo(t *testing.T, srv *testserver.Server, method, path string, body any, headers ...string) *testserver.Response {
	t.Helper()
	return testserver.Do(t, srv.URL, srv.Key, method, path, body, headers...)
}

// mcvCall calls an action, with an Idempotency-Key if key is set.
func mcvCall(t *testing.T, srv *testserver.Server, tool int64, action string, args map[string]any, key string) *testserver.Response {
	t.Helper()
	var h []string
	if key != "" {
		h = []string{"Idempotency-Key", key}
	}
	if args == nil {
		args = map[string]any{}
	}
	return mcvDo(t, srv, "POST", mqCallPath, map[string]any{"tool": tool, "action": action, "arguments": args}, h...)
}

// mcvResult requires a 200 call answer and returns it and its result object.
func mcvResult(t *testing.T, r *testserver.Response, isError bool) (map[string]any, map[string]any) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	m := fdObject(t, r)
	res, _ := m["result"].(map[string]any)
	if m["is_error"] != isError || res == nil {
		t.Fatalf("is_error %v, want %v, result object; body %s", m["is_error"], isError, r.Body)
	}
	return m, res
}

// mcvKeyState returns the state of an idempotency key, "" when it is free
// (404).
func mcvKeyState(t *testing.T, srv *testserver.Server, key string) string {
	t.Helper()
	r := mcvDo(t, srv, "GET", "/api/v1/idempotency-keys/"+url.PathEscape(key), nil)
	if r.Status == 404 {
		fdWantError(t, r, 404, "not_found")
		return ""
	}
	if r.Status != 200 {
		t.Fatalf("key %s: %d %s", key, r.Status, r.Body)
	}
	s, _ := fdObject(t, r)["state"].(string)
	return s
}

// mcvInboxArgs are send_reply's arguments.
var mcvInboxArgs = map[string]any{"business": "park-studio", "threadId": "t_81", "body": "The darker blue is attached."}

func TestMCPCoverage(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})

	for _, mode := range []mcptest.Options{{Stateless: true, PageSize: 3}, {Stateless: true, JSONResponse: true, PageSize: 3}} {
		t.Run(fmt.Sprintf("stateless server json=%v", mode.JSONResponse), func(t *testing.T) {
			counter := mcptest.Start(t, mcptest.Counter, mode)
			id := mqConnect(t, srv, fmt.Sprintf("stateless-%v", mode.JSONResponse), map[string]any{"url": counter.URL})
			if n := counter.Initializes(); n != 1 {
				t.Fatalf("configure initialized %d sessions, want 1 (its check)", n)
			}

			// 22 tools at 3 a page: 8 pages of tools/list.
			actions := mqActions(t, srv, id)
			if len(actions) != mcptest.CounterTools {
				t.Fatalf("%d actions, want %d", len(actions), mcptest.CounterTools)
			}
			if actions["increment"]["retryable"] != false || actions["read_count"]["retryable"] != true ||
				actions[fmt.Sprintf("dummy_%02d", mcptest.DummyTools-1)] == nil {
				t.Fatalf("increment %v, read_count %v", actions["increment"], actions["read_count"])
			}

			if _, res := mcvResult(t, mcvCall(t, srv, id, "read_count", nil, ""), false); fmt.Sprint(res["count"]) != "0" {
				t.Fatalf("read_count = %v, want 0", res["count"])
			}

			key := fmt.Sprintf("k-stateless-%v", mode.JSONResponse)
			answers := make([]*testserver.Response, 12)
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() { answers[i] = mcvCall(t, srv, id, "increment", nil, key) })
			}
			wg.Wait()
			var body []byte
			fresh, busy := 0, 0
			for _, r := range answers {
				switch {
				case r.Status == 200:
					if body != nil && !bytes.Equal(body, r.Body) {
						t.Fatalf("two different 200 bodies:\n%s\n%s", body, r.Body)
					}
					body = r.Body
					if r.Header.Get("Idempotent-Replayed") != "true" {
						fresh++
					}
				case r.Status == 409:
					mqWant(t, r, 409, "request_in_progress")
					busy++
				default:
					t.Fatalf("unexpected answer %d %s", r.Status, r.Body)
				}
			}
			t.Logf("%d of %d answered 200 (%d not replayed)", len(answers)-busy, len(answers), fresh)
			if n := counter.Calls("increment"); n != 1 {
				t.Fatalf("increment ran %d times under one key, want 1", n)
			}
			if fresh > 1 {
				t.Fatalf("%d answers were not marked replayed; only the run's own may be", fresh)
			}
			last := mcvCall(t, srv, id, "increment", nil, key)
			if last.Status != 200 || last.Header.Get("Idempotent-Replayed") != "true" || (body != nil && !bytes.Equal(last.Body, body)) {
				t.Fatalf("retry after the race: %d %v %s", last.Status, last.Header, last.Body)
			}
			if _, res := mcvResult(t, last, false); fmt.Sprint(res["count"]) != "1" {
				t.Fatalf("the stored outcome is %v, want count 1", res)
			}
			if _, res := mcvResult(t, mcvCall(t, srv, id, "read_count", nil, ""), false); fmt.Sprint(res["count"]) != "1" {
				t.Fatalf("read_count after the race = %v, want 1", res["count"])
			}
			if n := counter.Calls("increment"); n != 1 {
				t.Fatalf("increment ran %d times in all, want 1", n)
			}
			// A stateless server keeps no session, but Quiver still
			// initializes once and reuses its client session for every
			// listing and call.
			if n := counter.Initializes(); n != 2 {
				t.Fatalf("%d initializes, want 2 (configure's check and one pooled session)", n)
			}
		})
	}

	t.Run("inbox send_reply replays and cancel_send works", func(t *testing.T) {
		inbox := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
		id := mqConnect(t, srv, "inbox-cov", map[string]any{"url": inbox.URL, "bearer_token": mcptest.InboxKey})

		first := mcvCall(t, srv, id, "send_reply", mcvInboxArgs, "k-inbox-send")
		_, res := mcvResult(t, first, false)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("the first answer is marked replayed")
		}
		if res["status"] != "queued" {
			t.Fatalf("status = %v, want queued", res["status"])
		}
		if sendsAt := fdTime(t, res["sendsAt"]); !sendsAt.After(time.Now()) {
			t.Fatalf("sendsAt %v is not in the future (the undo window)", sendsAt)
		}
		sendID, _ := res["sendId"].(string)
		if !strings.HasPrefix(sendID, "s_") {
			t.Fatalf("sendId = %v", res["sendId"])
		}

		again := mcvCall(t, srv, id, "send_reply", mcvInboxArgs, "k-inbox-send")
		if again.Status != 200 || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d replayed=%q\n%s\nfirst:\n%s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Body)
		}
		if n := inbox.Calls("send_reply"); n != 1 {
			t.Fatalf("send_reply ran %d times, want 1", n)
		}

		_, res = mcvResult(t, mcvCall(t, srv, id, "cancel_send", map[string]any{"business": "park-studio", "sendId": sendID}, ""), false)
		if res["cancelled"] != true || res["sendId"] != sendID {
			t.Fatalf("cancel_send: %v", res)
		}
		if n := inbox.Calls("cancel_send"); n != 1 {
			t.Fatalf("cancel_send ran %d times, want 1", n)
		}
	})

	// The inbox refuses a bad key before anything runs, with 401 (its own
	// way) or 403; either is 422 on the field that carried the key, with the
	// server's own message.
	for _, status := range []int{401, 403} {
		t.Run(fmt.Sprintf("upstream %d on configure names the field with the server's message", status), func(t *testing.T) {
			inbox := mcptest.Start(t, mcptest.Inbox, mcptest.Options{RefuseStatus: status})
			for _, c := range []struct {
				field  string
				config map[string]any
			}{
				{"bearer_token", map[string]any{"url": inbox.URL, "bearer_token": "sydbar_revoked"}},
				{"headers", map[string]any{"url": inbox.URL, "headers": map[string]any{"X-Api-Key": "sydbar_revoked"}}},
			} {
				id, r := mqConfigure(t, srv, "refused", c.config)
				msg, _ := fdWantFields(t, r, "validation_error", c.field)[c.field].(string)
				if !strings.Contains(msg, "This key doesn't check out. Create a new one in Sydbar") {
					t.Errorf("%d, %s: message %q does not carry the server's own", status, c.field, msg)
				}
				if strings.Contains(string(r.Body), "sydbar_revoked") {
					t.Errorf("the refused key is echoed back: %s", r.Body)
				}
				if got := fdObject(t, mcvDo(t, srv, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)); got["is_configured"] != false {
					t.Errorf("the refused tool is configured: %v", got)
				}
			}
			if n := inbox.Initializes(); n != 0 {
				t.Fatalf("%d initializes reached the refusing server", n)
			}
			mqConnect(t, srv, "accepted", map[string]any{"url": inbox.URL, "headers": map[string]any{"X-Api-Key": mcptest.InboxKey}})
		})
	}

	t.Run("a server's JSON-RPC refusal releases the key", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
		id := mqConnect(t, srv, "counter-release", map[string]any{"url": counter.URL})
		if a := mqActions(t, srv, id)["increment"]; a == nil || a["retryable"] != false {
			t.Fatalf("increment: %v", a)
		}

		// The server is redeployed without increment and tells no one:
		// Quiver's cached discovery still offers it.
		counter.DropTool("increment")
		r := mcvCall(t, srv, id, "increment", nil, "k-release")
		m := fdWantError(t, r, 422, "invalid_arguments")
		if msg, _ := m["message"].(string); !strings.Contains(msg, `unknown tool "increment"`) {
			t.Errorf("message %q does not carry the server's refusal", msg)
		}
		if f := fdFields(t, m); f["arguments"] == nil {
			t.Errorf("fields %v, want arguments", f)
		}
		if n := counter.Calls("increment"); n != 0 {
			t.Fatalf("increment ran %d times", n)
		}
		if s := mcvKeyState(t, srv, "k-release"); s != "" {
			t.Fatalf("after a pre-effect rejection the key is %q, want free (404)", s)
		}
		testserver.Eventually(t, 5*time.Second, "the rejected call in the call log", func() bool {
			r := mcvDo(t, srv, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d", id), nil)
			for _, c := range fdList(t, fdObject(t, r), "calls") {
				if c["idempotency_key"] == "k-release" && c["outcome"] == "rejected" {
					return true
				}
			}
			return false
		})

		counter.RestoreTool("increment")
		ok := mcvCall(t, srv, id, "increment", nil, "k-release")
		if _, res := mcvResult(t, ok, false); fmt.Sprint(res["count"]) != "1" || ok.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the corrected call: replayed=%q %s", ok.Header.Get("Idempotent-Replayed"), ok.Body)
		}
		if n := counter.Calls("increment"); n != 1 {
			t.Fatalf("increment ran %d times, want 1", n)
		}
		if s := mcvKeyState(t, srv, "k-release"); s != "succeeded" {
			t.Fatalf("key state %q, want succeeded", s)
		}
	})

	t.Run("a server's invalid-params refusal releases the key for corrected arguments", func(t *testing.T) {
		// order_status's schema takes an empty merchant; the server refuses
		// it (invalid params) without running anything.
		mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{})
		id := mqConnect(t, srv, "mail-release", map[string]any{"url": mail.URL})
		m := fdWantError(t, mcvCall(t, srv, id, "order_status", map[string]any{"merchant": ""}, "k-merchant"), 422, "invalid_arguments")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "order_status requires merchant") {
			t.Errorf("message %q does not carry the server's refusal", msg)
		}
		if n := mail.Calls("order_status"); n != 0 {
			t.Fatalf("order_status ran %d times", n)
		}
		if s := mcvKeyState(t, srv, "k-merchant"); s != "" {
			t.Fatalf("the key is %q, want free", s)
		}
		// A different body under the released key is a new call, not a reuse.
		_, res := mcvResult(t, mcvCall(t, srv, id, "order_status", map[string]any{"merchant": "Acme"}, "k-merchant"), false)
		orders, _ := res["orders"].([]any)
		if len(orders) != 1 || orders[0].(map[string]any)["merchant"] != "Acme" {
			t.Fatalf("result %v", res)
		}
		if s := mcvKeyState(t, srv, "k-merchant"); s != "succeeded" {
			t.Fatalf("key state %q, want succeeded", s)
		}
	})
}

// TestMCPToolNameWithNUL connects a server that lists a tool whose name
// holds U+0000, which Postgres text cannot store, and one without a name,
// which no call can name. Quiver leaves both out, and the server's other tools are called and logged as usual: before,
// every call log batch that held such a call's entry failed whole, losing
// the entries of every other call in it.
func TestMCPToolNameWithNUL(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	counter.AddTool("bad\x00name")
	counter.AddTool("") // no call could name it
	id := mqConnect(t, srv, "nul", map[string]any{"url": counter.URL})

	actions := mqActions(t, srv, id)
	if actions["read_count"] == nil {
		t.Fatalf("read_count missing from %d actions", len(actions))
	}
	for name := range actions {
		if name == "" || strings.ContainsRune(name, 0) {
			t.Errorf("action %q listed", name)
		}
	}
	if r := mcvCall(t, srv, id, "bad\x00name", nil, ""); r.Status != 404 {
		t.Errorf("calling the left-out tool: %d %s, want 404", r.Status, r.Body)
	}
	r := mcvCall(t, srv, id, "read_count", nil, "")
	if r.Status != 200 {
		t.Fatalf("read_count: %d %s", r.Status, r.Body)
	}
	callID := r.JSON()["call_id"]
	deadline := time.Now().Add(10 * time.Second)
	for {
		log := mcvDo(t, srv, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d", id), nil)
		if bytes.Contains(log.Body, []byte(fmt.Sprint(callID))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %v not in the call log: %s", callID, log.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPHandshakeHangsIsUnreachable reaches a custom MCP server through a
// proxy that accepts connections and never answers, so no session opens.
// Nothing was dispatched: the keyed call is 502 tool_unreachable and its key
// is free, where it was 504 tool_outcome_unknown, with nothing recorded,
// and the retry ran the tool. It waits for the tool no longer than the call
// timeout (3 s here), not the connector's own connect limit (15 s).
func TestMCPHandshakeHangsIsUnreachable(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_CALL_TIMEOUT": "3s"}})
	counter, px, id := mqConnectBehindProxy(t, srv, "hangs")

	counter.Restart() // forget Quiver's session and close its connections
	px.setCut(true)   // and those through the proxy
	px.setCut(false)
	px.setHang(true)
	start := time.Now()
	r := mcvCall(t, srv, id, "increment", nil, "hang-1")
	waited := time.Since(start)
	px.setHang(false)
	mqWant(t, r, 502, "tool_unreachable")
	if waited > 6*time.Second {
		t.Errorf("the call waited %v for a tool that does not answer, with a 3s call timeout", waited)
	}
	if r := mcvDo(t, srv, "GET", "/api/v1/idempotency-keys/hang-1", nil); r.Status != 404 {
		t.Errorf("the key after an unreachable call: %d %s, want 404 (free)", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 0 {
		t.Fatalf("increment ran %d times", n)
	}
	// The session that hung is given up after the connector's connect limit;
	// until then a retry is unreachable too, and never runs anything.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := mcvCall(t, srv, id, "increment", nil, "hang-1")
		if r.Status == 200 {
			break
		}
		mqWant(t, r, 502, "tool_unreachable")
		if time.Now().After(deadline) {
			t.Fatal("the retry never went through")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Fatalf("increment ran %d times, want 1", n)
	}
}

// TestMCPAgentWithAHangingTool attaches to one agent a healthy server and
// one behind a proxy that never answers. The agent's endpoint waits for
// the hanging tool's actions for a few seconds at most, serves the healthy
// one meanwhile, and does not wait on the hanging one again at the next
// list (a second later): before, every request to the agent, ping
// included, waited out the connector's 15 s limits, every second.
func TestMCPAgentWithAHangingTool(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	healthy := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	healthyID := mqConnect(t, srv, "healthy", map[string]any{"url": healthy.URL})
	// Configuring checks the server on a session of its own, so nothing of
	// the tool is cached; its connections through the proxy are closed.
	_, px, hangingID := mqConnectBehindProxy(t, srv, "hanging")
	px.setCut(true)
	px.setCut(false)
	px.setHang(true)
	r := mcvDo(t, srv, "POST", "/api/v1/agents/", map[string]any{"name": "mixed", "tools": []int64{healthyID, hangingID}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agent := fdInt(t, fdObject(t, r)["id"])

	// Connecting lists the agent's tools: it waits for the hanging one, but
	// a few seconds, not the connector's 15.
	start := time.Now()
	cs, err := mqSession(t, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, agent), srv.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("connecting took %v, want at most 8s", d)
	}
	for i := range 2 {
		time.Sleep(1500 * time.Millisecond) // past the agent list's cache: it is built again
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "healthy__read_count", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("call %d took %v, want at most 2s: the hanging tool was waited on again", i, d)
		}
	}
}

// mqConnectBehindProxy starts a Counter server and connects it to srv as
// custom-mcp tool name through a proxy the test controls: the server, the
// proxy and the tool's ID.
func mqConnectBehindProxy(t *testing.T, srv *testserver.Server, name string) (*mcptest.Server, *tcpProxy, int64) {
	t.Helper()
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	u, err := url.Parse(counter.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, u.Host)
	return counter, px, mqConnect(t, srv, name, map[string]any{"url": "http://" + px.Addr() + u.Path})
}

// TestMCPLoopingSchemaKeepsTheServerUp connects a server whose tool's input
// schema applies itself to the same value forever. Before, a keyed call of
// that tool made the validator recurse until the stack overflowed, which
// killed the whole process (this test's, as the server runs in it). Such a
// schema is not enforced: the call runs once, and the server answers on.
func TestMCPLoopingSchemaKeepsTheServerUp(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	counter.Add(&mcp.Tool{Name: "loop", InputSchema: map[string]any{
		"type": "object", "$ref": "#/$defs/X", "$defs": map[string]any{"X": map[string]any{"$ref": "#/$defs/X"}},
	}})
	id := mqConnect(t, srv, "loop", map[string]any{"url": counter.URL})
	if r := mcvCall(t, srv, id, "loop", map[string]any{"q": 1}, "k-loop"); r.Status != 200 {
		t.Fatalf("the call: %d %s", r.Status, r.Body)
	}
	if n := counter.Calls("loop"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if r := mcvCall(t, srv, id, "read_count", nil, ""); r.Status != 200 {
		t.Fatalf("the server after it: %d %s", r.Status, r.Body)
	}
}
