package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// The secrets of the h12 audit: a tool's bearer token, extra header and
// a key in its URL's query.
const (
	h12Bearer = "h12-bearer-Zq8sT4"
	h12Header = "h12-header-Kp3wX9"
	h12URLKey = "h12-urlkey-Wm5rB2"
)

// TestH12ObsCallPaths: the call paths obsCallMetrics leaves out (arguments
// refused by the schema, a call running when its key is retried, a timeout,
// credentials the tool's server refuses, a server gone) move exactly the call series the
// README names, once, over REST and over the agent's MCP endpoint; every
// line a request logs at info or above carries its request ID, the warn
// and error lines of a call name its call ID, tool and action, no line
// names a secret, and a client's bad input logs nothing at error.
func TestH12ObsCallPaths(t *testing.T) {
	env := map[string]string{"QUIVER_CALL_TIMEOUT": "700ms"}
	t.Run("embedded", func(t *testing.T) { h12ObsCallPaths(t, testserver.Options{Env: env}) })
	t.Run("postgres+redis", func(t *testing.T) {
		h12ObsCallPaths(t, testserver.Options{Postgres: true, RedisURL: sharedRedisURL(), Env: env})
	})
}

func h12ObsCallPaths(t *testing.T, opts testserver.Options) {
	srv := testserver.Start(t, opts)
	var refuse atomic.Bool
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{
		SlowDelay:     1500 * time.Millisecond,
		Authorize:     func(token string) bool { return token == h12Bearer && !refuse.Load() },
		RequireHeader: map[string]string{"X-H12": h12Header},
	})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL + "?key=" + h12URLKey, "bearer_token": h12Bearer, "headers": map[string]any{"X-H12": h12Header}})
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	ctx := context.Background()
	mcpCall := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	first := func(outcome string) map[string]float64 {
		return map[string]float64{`quiver_calls_total{outcome="` + outcome + `"}`: 1, `quiver_call_duration_seconds_count{phase="first"}`: 1}
	}
	none := map[string]float64{}
	mark := len(srv.LogText())

	// Arguments the action's schema refuses: nothing dispatched.
	obsDelta(t, srv, "rest invalid arguments", none, func() {
		mqWant(t, mqCall(srv, id, "big", map[string]any{"bytes": "many"}, "h12-k1"), 422, "invalid_arguments")
	})
	obsDelta(t, srv, "mcp invalid arguments", none, func() { mcpCall("counter__big", map[string]any{"bytes": "many"}) })

	// A retry while the first call runs: 409 request_in_progress, once. The
	// first call then times out: outcome unknown, once.
	for _, via := range []string{"rest", "mcp"} {
		key := "h12-slow-" + via
		started := make(chan struct{})
		done := make(chan struct{})
		obsDelta(t, srv, via+" slow call timing out, retried meanwhile", map[string]float64{
			`quiver_calls_total{outcome="outcome_unknown"}`: 1, `quiver_call_duration_seconds_count{phase="first"}`: 1,
			`quiver_call_conflicts_total{kind="request_in_progress"}`: 1,
		}, func() {
			go func() {
				defer close(done)
				close(started)
				if via == "rest" {
					r := mqCall(srv, id, "slow", nil, key)
					if r.Status != 504 {
						t.Errorf("slow: %d %s", r.Status, r.Body)
					}
					return
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__slow", Arguments: map[string]any{"idempotency_key": key}})
				if err != nil || !res.IsError {
					t.Errorf("slow over mcp: %v %v", res, err)
				}
			}()
			<-started
			testserver.Eventually(t, 5*time.Second, "the slow call running", func() bool {
				return srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil).Status == 200
			})
			if via == "rest" {
				mqWant(t, mqCall(srv, id, "slow", nil, key), 409, "request_in_progress")
			} else if res := mcpCall("counter__slow", map[string]any{"idempotency_key": key}); !res.IsError {
				t.Errorf("slow retried over mcp: not a tool error")
			}
			<-done
		})
	}

	// The tool's server refuses the credentials it accepted: 502
	// upstream_auth_failed, the call rejected once, its key released.
	refuse.Store(true)
	obsDelta(t, srv, "rest upstream auth failed", first("rejected"), func() {
		mqWant(t, mqCall(srv, id, "increment", nil, "h12-k2"), 502, "upstream_auth_failed")
	})
	obsDelta(t, srv, "mcp upstream auth failed", first("rejected"), func() {
		if res := mcpCall("counter__increment", map[string]any{"idempotency_key": "h12-m2"}); !res.IsError {
			t.Errorf("refused over mcp: not a tool error")
		}
	})
	refuse.Store(false)

	// The tool's server is gone: 502 tool_unreachable, rejected once.
	counter.Close()
	obsDelta(t, srv, "rest unreachable", first("rejected"), func() {
		mqWant(t, mqCall(srv, id, "increment", nil, "h12-k3"), 502, "tool_unreachable")
	})
	obsDelta(t, srv, "mcp unreachable", first("rejected"), func() {
		if res := mcpCall("counter__increment", map[string]any{"idempotency_key": "h12-m3"}); !res.IsError {
			t.Errorf("unreachable over mcp: not a tool error")
		}
	})

	lines := obsLinesSince(t, srv, mark)
	calls := 0
	for _, l := range lines {
		level, _ := l["level"].(string)
		if level == "DEBUG" {
			continue // the MCP SDK's routine lines, documented to have none
		}
		if _, ok := l["request_id"]; !ok {
			t.Errorf("a %s line without request_id: %v", level, l)
		}
		if l["msg"] == "request" {
			if s, _ := l["status"].(float64); s == 422 && level != "INFO" {
				t.Errorf("a 422's request line at %s: %v", level, l)
			}
			continue
		}
		if level == "WARN" || level == "ERROR" {
			if _, ok := l["call_id"]; ok {
				calls++
				if l["msg"] == "call outcome unknown" && l["code"] != "tool_outcome_unknown" {
					t.Errorf("the unknown outcome's line names no code tool_outcome_unknown: %v", l)
				}
				for _, f := range []string{"tool", "action"} {
					if _, ok := l[f]; !ok {
						t.Errorf("a %s line of a call without %s: %v", level, f, l)
					}
				}
			}
		}
	}
	if calls == 0 {
		t.Errorf("no warn line named a call (the timeouts' \"call outcome unknown\")")
	}
	// A request answered 502 or 504 (over MCP, a tool error of that status)
	// has its request line at warn, which names a route and a status alone:
	// a line of the same request says which call, tool and action failed.
	named := map[any]bool{}
	for _, l := range lines {
		if l["msg"] != "request" && l["call_id"] != nil && l["tool"] != nil && l["action"] != nil {
			named[l["request_id"]] = true
		}
	}
	for _, l := range lines {
		if l["msg"] == "request" && l["level"] == "WARN" && !named[l["request_id"]] {
			t.Errorf("a request answered at warn with no line naming its call, tool and action: %v", l)
		}
	}
	text := srv.LogText()
	for _, secret := range []string{h12Bearer, h12Header, h12URLKey, srv.Key} {
		if strings.Contains(text, secret) {
			t.Errorf("the log names the secret %q:\n%s", secret, grepLines(text, secret))
		}
	}
	if strings.Contains(text, `"level":"ERROR"`) {
		t.Errorf("an error line for a tool's or a client's failure:\n%s", grepLines(text, `"level":"ERROR"`))
	}
}

// TestH12ObsRateLimited: a call over the account's rate limit, over REST
// and MCP, is no dispatched call: no call series moves, and its request
// line is at info.
func TestH12ObsRateLimited(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_CALL_RATE_LIMIT": "0.000278"}})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	obsDelta(t, srv, "first call", map[string]float64{`quiver_calls_total{outcome="succeeded"}`: 1, `quiver_call_duration_seconds_count{phase="first"}`: 1},
		func() { mqWantStatus(t, mqCall(srv, id, "read_count", nil, ""), 200) })
	mark := len(srv.LogText())
	obsDelta(t, srv, "rest rate limited", map[string]float64{}, func() {
		mqWant(t, mqCall(srv, id, "increment", nil, "h12-r1"), 429, "rate_limited")
	})
	obsDelta(t, srv, "mcp rate limited", map[string]float64{}, func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "counter__read_count", Arguments: map[string]any{}})
		if err != nil || !res.IsError {
			t.Errorf("over mcp: %v %v", res, err)
		}
	})
	for _, l := range obsLinesSince(t, srv, mark) {
		if l["level"] == "ERROR" || (l["msg"] == "request" && l["level"] != "INFO") {
			t.Errorf("a rate-limited call logged at %v: %v", l["level"], l)
		}
	}
}
