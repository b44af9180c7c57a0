package e2e

// The builtin tavily tool against a fake Tavily (QUIVER_TAVILY_BASE_URL):
// the answers of Tavily's that are not a plain result, through the call
// API and an agent's MCP endpoint.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// fakeTavily answers POST /search by its query: "big" is a 9 MiB result,
// "busy" a 429 with Retry-After: 7, "plan" a 432, "flaky" a 429 the first
// time and a result after; anything else a small result.
type fakeTavily struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
}

func startFakeTavily(t *testing.T) *fakeTavily {
	f := &fakeTavily{counts: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Query string `json:"query"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &in)
		f.mu.Lock()
		f.counts[in.Query]++
		n := f.counts[in.Query]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case in.Query == "big":
			io.WriteString(w, `{"results":[{"content":"`+strings.Repeat("x", 9<<20)+`"}]}`)
		case in.Query == "busy" || in.Query == "flaky" && n == 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"detail":{"error":"Too many requests, slow down."}}`)
		case in.Query == "plan":
			w.WriteHeader(432)
			io.WriteString(w, `{"detail":{"error":"This request exceeds your plan's set usage limit."}}`)
		default:
			fmt.Fprintf(w, `{"query":%q,"results":[]}`, in.Query)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeTavily) count(query string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[query]
}

// tvSetup starts Quiver on the fake and connects a configured tavily tool.
func tvSetup(t *testing.T) (*testserver.Server, *fakeTavily, int64) {
	t.Helper()
	fake := startFakeTavily(t)
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_TAVILY_BASE_URL": fake.URL}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-e2e"}})
	if r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	return srv, fake, id
}

func tvSearch(tool int64, query string) map[string]any {
	return map[string]any{"tool": tool, "action": "search", "arguments": map[string]any{"query": query}}
}

func TestTavilyLimitsAndLargeResults(t *testing.T) {
	srv, fake, id := tvSetup(t)

	t.Run("result over 8 MiB is an error result, stored and replayed", func(t *testing.T) {
		r := srv.Do("POST", callPath, tvSearch(id, "big"), "Idempotency-Key", "tv-big")
		var body struct {
			IsError bool `json:"is_error"`
			Result  struct {
				Error   string `json:"error"`
				Message string `json:"message"`
			} `json:"result"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &body) != nil || !body.IsError || body.Result.Error != "result_too_large" || body.Result.Message == "" {
			t.Fatalf("%d %.300s", r.Status, r.Body)
		}
		again := srv.Do("POST", callPath, tvSearch(id, "big"), "Idempotency-Key", "tv-big")
		if again.Status != 200 || string(again.Body) != string(r.Body) || again.Header.Get("Idempotent-Replayed") != "true" || fake.count("big") != 1 {
			t.Fatalf("replay: %d %v %.300s (ran %d times)", again.Status, again.Header, again.Body, fake.count("big"))
		}
	})

	t.Run("429 is rate_limited with the provider's Retry-After", func(t *testing.T) {
		r := srv.Do("POST", callPath, tvSearch(id, "busy"))
		env := fdWantError(t, r, 429, "rate_limited")
		if r.Header.Get("Retry-After") != "7" {
			t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
		}
		msg, _ := env["message"].(string)
		if !strings.Contains(msg, "provider") || !strings.Contains(msg, "Tavily") || !strings.Contains(msg, "slow down") || env["fields"] != nil {
			t.Errorf("envelope: %v", env)
		}
	})

	t.Run("432 is rate_limited without Retry-After, naming the plan", func(t *testing.T) {
		r := srv.Do("POST", callPath, tvSearch(id, "plan"))
		env := fdWantError(t, r, 429, "rate_limited")
		if r.Header.Get("Retry-After") != "" {
			t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
		}
		if msg, _ := env["message"].(string); !strings.Contains(msg, "plan's usage limit") {
			t.Errorf("envelope: %v", env)
		}
	})

	t.Run("the key is released and the call logged as rejected", func(t *testing.T) {
		r := srv.Do("POST", callPath, tvSearch(id, "flaky"), "Idempotency-Key", "tv-flaky")
		fdWantError(t, r, 429, "rate_limited")
		if k := srv.Do("GET", "/api/v1/idempotency-keys/tv-flaky", nil); k.Status != 404 {
			t.Errorf("key after a 429: %d %s", k.Status, k.Body)
		}
		r = srv.Do("POST", callPath, tvSearch(id, "flaky"), "Idempotency-Key", "tv-flaky")
		if r.Status != 200 || r.JSON()["is_error"] != false || fake.count("flaky") != 2 {
			t.Fatalf("same key after the 429: %d %s (ran %d times)", r.Status, r.Body, fake.count("flaky"))
		}
		testserver.Eventually(t, 3*time.Second, "the call log", func() bool {
			r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", id), nil)
			calls, _ := r.JSON()["calls"].([]any)
			outcomes := map[string]int{}
			for _, c := range calls {
				m := c.(map[string]any)
				if m["idempotency_key"] == "tv-flaky" {
					outcomes[m["outcome"].(string)]++
				}
			}
			return outcomes["rejected"] == 1 && outcomes["succeeded"] == 1
		})
	})

	t.Run("over an agent's MCP endpoint, retry_after in the tool error", func(t *testing.T) {
		r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "researcher", "tools": []int64{id}})
		if r.Status != 201 {
			t.Fatalf("agent: %d %s", r.Status, r.Body)
		}
		endpoint := fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, int64(r.JSON()["id"].(float64)))
		cs, err := mqSession(t, endpoint, srv.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tavily__search", Arguments: map[string]any{"query": "busy"}})
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "rate_limited" || env["retry_after"] != float64(7) {
			t.Errorf("busy: %v", env)
		}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tavily__search", Arguments: map[string]any{"query": "plan"}})
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "rate_limited" || env["retry_after"] != nil {
			t.Errorf("plan: %v", env)
		}
	})
}
