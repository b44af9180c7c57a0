package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// obsMetrics scrapes /metrics into series → value (quiver_ series only).
func obsMetrics(t testing.TB, srv *testserver.Server) map[string]float64 {
	t.Helper()
	r := srv.Do("GET", "/metrics", nil)
	if r.Status != 200 {
		t.Fatalf("/metrics: %d", r.Status)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(r.Body), "\n") {
		if !strings.HasPrefix(l, "quiver_") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			out[l[:i]] = v
		}
	}
	return out
}

// The call series a probe watches.
var obsCallSeries = []string{
	`quiver_calls_total{outcome="succeeded"}`, `quiver_calls_total{outcome="tool_error"}`,
	`quiver_calls_total{outcome="outcome_unknown"}`, `quiver_calls_total{outcome="rejected"}`,
	`quiver_call_replays_total`,
	`quiver_call_conflicts_total{kind="idempotency_key_reused"}`,
	`quiver_call_conflicts_total{kind="request_in_progress"}`,
	`quiver_call_conflicts_total{kind="tool_outcome_unknown"}`,
	`quiver_call_duration_seconds_count{phase="first"}`, `quiver_call_duration_seconds_count{phase="replay"}`,
	`quiver_calls_in_progress`,
}

// obsDelta runs do and requires the call series to move by exactly want
// (every other watched series by zero).
func obsDelta(t *testing.T, srv *testserver.Server, what string, want map[string]float64, do func()) {
	t.Helper()
	before := obsMetrics(t, srv)
	do()
	after := obsMetrics(t, srv)
	for _, s := range obsCallSeries {
		if got := after[s] - before[s]; got != want[s] {
			t.Errorf("%s: %s moved by %v, want %v", what, s, got, want[s])
		}
	}
}

// TestProbeObsCallMetrics: each kind of call moves its counters exactly
// once, over REST and over the agent's MCP endpoint, and the latency
// histogram observes each call once.
func TestProbeObsCallMetrics(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { obsCallMetrics(t, testserver.Options{}) })
	t.Run("postgres+redis", func(t *testing.T) {
		obsCallMetrics(t, testserver.Options{Postgres: true, RedisURL: "redis://" + testdb.RedisAddr() + "/0"})
	})
}

func obsCallMetrics(t *testing.T, opts testserver.Options) {
	srv := testserver.Start(t, opts)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	dead := mqConnect(t, srv, "dead", map[string]any{"url": counter.URL})
	_, endpoint := mqaAgent(t, srv, id, dead)
	cs := mqaSession(t, srv, endpoint)
	ctx := context.Background()
	mcpCall := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	first := func(outcome string) map[string]float64 {
		return map[string]float64{`quiver_calls_total{outcome="` + outcome + `"}`: 1, `quiver_call_duration_seconds_count{phase="first"}`: 1}
	}
	replay := map[string]float64{`quiver_call_replays_total`: 1, `quiver_call_duration_seconds_count{phase="replay"}`: 1}
	reused := map[string]float64{`quiver_call_conflicts_total{kind="idempotency_key_reused"}`: 1}
	unknownConflict := map[string]float64{`quiver_call_conflicts_total{kind="tool_outcome_unknown"}`: 1}
	none := map[string]float64{}

	// REST.
	obsDelta(t, srv, "rest success", first("succeeded"), func() { mqWantStatus(t, mqCall(srv, id, "read_count", nil, ""), 200) })
	obsDelta(t, srv, "rest keyed success", first("succeeded"), func() { mqWantStatus(t, mqCall(srv, id, "increment", nil, "obs-k1"), 200) })
	obsDelta(t, srv, "rest replay", replay, func() { mqWantStatus(t, mqCall(srv, id, "increment", nil, "obs-k1"), 200) })
	obsDelta(t, srv, "rest reused", reused, func() {
		mqWant(t, mqCall(srv, id, "increment", map[string]any{"x": 1}, "obs-k1"), 409, "idempotency_key_reused")
	})
	obsDelta(t, srv, "rest tool error", first("tool_error"), func() { mqWantStatus(t, mqCall(srv, id, "fail", nil, ""), 200) })
	obsDelta(t, srv, "rest keyed tool error", first("tool_error"), func() { mqWantStatus(t, mqCall(srv, id, "fail", nil, "obs-k2"), 200) })
	obsDelta(t, srv, "rest tool error replay", replay, func() { mqWantStatus(t, mqCall(srv, id, "fail", nil, "obs-k2"), 200) })
	obsDelta(t, srv, "rest not dispatched (unknown action)", none, func() { mqWantStatus(t, mqCall(srv, id, "nosuch", nil, "obs-k3"), 404) })
	obsDelta(t, srv, "rest no key", none, func() { mqWant(t, mqCall(srv, id, "increment", nil, ""), 400, "idempotency_key_required") })
	obsDelta(t, srv, "rest unknown", first("outcome_unknown"), func() { mqWantStatus(t, mqCall(srv, id, "drop_after_act", nil, "obs-k4"), 504) })
	obsDelta(t, srv, "rest unknown again", unknownConflict, func() {
		mqWant(t, mqCall(srv, id, "drop_after_act", nil, "obs-k4"), 409, "tool_outcome_unknown")
	})

	// Agent MCP.
	obsDelta(t, srv, "mcp success", first("succeeded"), func() { mcpCall("counter__read_count", map[string]any{}) })
	obsDelta(t, srv, "mcp keyed", first("succeeded"), func() { mcpCall("counter__increment", map[string]any{"idempotency_key": "obs-m1"}) })
	obsDelta(t, srv, "mcp replay", replay, func() { mcpCall("counter__increment", map[string]any{"idempotency_key": "obs-m1"}) })
	obsDelta(t, srv, "mcp reused", reused, func() { mcpCall("counter__increment", map[string]any{"idempotency_key": "obs-m1", "x": 1}) })
	obsDelta(t, srv, "mcp tool error", first("tool_error"), func() { mcpCall("counter__fail", map[string]any{}) })
	obsDelta(t, srv, "mcp unknown", first("outcome_unknown"), func() { mcpCall("counter__drop_after_act", map[string]any{"idempotency_key": "obs-m2"}) })
	obsDelta(t, srv, "mcp unknown again", unknownConflict, func() {
		mcpCall("counter__drop_after_act", map[string]any{"idempotency_key": "obs-m2"})
	})
	obsDelta(t, srv, "mcp no key", none, func() { mcpCall("counter__increment", map[string]any{}) })

	// Pre-dispatch refusal by the server (connect refused): rejected, and the
	// key released.
	counter.Close()
	obsDelta(t, srv, "rest unreachable", first("rejected"), func() { mqWantStatus(t, mqCall(srv, dead, "increment", nil, "obs-k5"), 502) })
	obsDelta(t, srv, "mcp unreachable", first("rejected"), func() { mcpCall("dead__increment", map[string]any{"idempotency_key": "obs-m3"}) })
	ks := srv.Do("GET", "/api/v1/idempotency-keys/obs-k5", nil)
	if ks.Status != 404 {
		t.Errorf("released key: %d %s", ks.Status, ks.Body)
	}
	body := string(srv.Do("GET", "/metrics", nil).Body)
	for _, bad := range []string{`"obs-k`, `"obs-m`, `"counter`, `increment"`, counter.URL} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics names %q:\n%s", bad, grepLines(body, bad))
		}
	}
}

func mqWantStatus(t testing.TB, r *testserver.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("got %d %s, want %d", r.Status, r.Body, status)
	}
}
