package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// probeCCReplicas starts two replicas on one Postgres database and one
// Redis prefix, as a deployment runs them.
func probeCCReplicas(t *testing.T) [2]*testserver.Server {
	t.Helper()
	a := testserver.Start(t, testserver.Options{Postgres: true, RedisURL: sharedRedisURL()})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL, RedisURL: sharedRedisURL()})
	return [2]*testserver.Server{a, b}
}

// probeCCToolsCall posts one tools/call to an agent's MCP endpoint and
// returns the JSON-RPC result, read from a JSON or event-stream answer.
func probeCCToolsCall(t *testing.T, srv *testserver.Server, agent int64, name string, args map[string]any) map[string]any {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}}
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/%d/mcp", agent), msg,
		"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	body := string(r.Body)
	if i := strings.Index(body, "data: "); i >= 0 {
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	var out struct {
		Result map[string]any `json:"result"`
	}
	if r.Status != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Result == nil {
		t.Errorf("tools/call %s: %d %s", name, r.Status, r.Body)
	}
	return out.Result
}

// TestProbeCCMCPAndRESTShareKeysAcrossReplicas: an agent's tools/call with
// an idempotency_key and a REST call with the same Idempotency-Key and
// arguments are one request to the engine (the MCP call's body is the REST
// body without the key argument), wherever each lands: raced on two
// replicas, each key runs once, every REST 200 is the same bytes, and every
// MCP result carries that run's outcome; the rest are request_in_progress.
func TestProbeCCMCPAndRESTShareKeysAcrossReplicas(t *testing.T) {
	reps := probeCCReplicas(t)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	tool := mqConnect(t, reps[0], "counter", map[string]any{"url": counter.URL})
	agent, _ := mqaAgent(t, reps[1], tool)
	const keys = 6
	var wg sync.WaitGroup
	for k := range keys {
		key := fmt.Sprintf("probe-cc-mcp-%d", k)
		var mu sync.Mutex
		var rest [][]byte
		var viaMCP []string
		for i := range 4 {
			srv := reps[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i < 2 {
					r := mqCall(srv, tool, "increment", map[string]any{}, key)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case r.Status == 200:
						rest = append(rest, r.Body)
					case r.Status == 409 && r.JSON()["error"] == "request_in_progress":
					default:
						t.Errorf("REST %s: %d %s", key, r.Status, r.Body)
					}
					return
				}
				res := probeCCToolsCall(t, srv, agent, "counter__increment", map[string]any{"idempotency_key": key})
				text, _ := json.Marshal(res["content"])
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res["isError"] != true:
					viaMCP = append(viaMCP, string(text))
				case !strings.Contains(string(text), "request_in_progress"):
					t.Errorf("tools/call %s: %s", key, text)
				}
			}()
		}
		wg.Wait()
		for _, srv := range reps {
			r := mqCall(srv, tool, "increment", map[string]any{}, key)
			if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("REST replay of %s: %d %s", key, r.Status, r.Body)
			}
			rest = append(rest, r.Body)
		}
		for _, b := range rest[1:] {
			if !bytes.Equal(b, rest[0]) {
				t.Errorf("key %s: REST answers differ:\n%s\n%s", key, rest[0], b)
			}
		}
		t.Logf("key %s: %d REST answers, %d tools/call results", key, len(rest), len(viaMCP))
		var first struct {
			Result struct {
				Count int `json:"count"`
			} `json:"result"`
		}
		if err := json.Unmarshal(rest[0], &first); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{\"count\":%d}`, first.Result.Count)
		for _, m := range viaMCP {
			if !strings.Contains(m, want) {
				t.Errorf("key %s: tools/call answered %s, REST %s", key, m, rest[0])
			}
		}
	}
	if n := counter.Calls("increment"); n != keys {
		t.Fatalf("increment ran %d times for %d keys", n, keys)
	}
}

// TestProbeCCAgentPatchRacesToolDelete: a PATCH attaching a tool on one
// replica while the tool is deleted on the other never leaves the agent
// pointing at the deleted tool, on either replica; the PATCH is a 200 or
// a 422 naming the tool, never a 500.
func TestProbeCCAgentPatchRacesToolDelete(t *testing.T) {
	reps := probeCCReplicas(t)
	keep := mqConnect(t, reps[0], "keep", map[string]any{"url": mcptest.Start(t, mcptest.Counter, mcptest.Options{}).URL})
	for i := range 12 {
		r := reps[0].Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
		if r.Status != 201 {
			t.Fatalf("tool: %d %s", r.Status, r.Body)
		}
		gone := int64(r.JSON()["id"].(float64))
		agent, _ := mqaAgent(t, reps[1], keep)
		var wg sync.WaitGroup
		var patch *testserver.Response
		wg.Add(2)
		go func() {
			defer wg.Done()
			patch = reps[i%2].Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"tools": []int64{keep, gone}})
		}()
		go func() {
			defer wg.Done()
			// A PATCH takes longer than a DELETE: a few rounds give the
			// PATCH a head start, so both orders are raced.
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			if d := reps[(i+1)%2].Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", gone), nil); d.Status != 204 {
				t.Errorf("delete: %d %s", d.Status, d.Body)
			}
		}()
		wg.Wait()
		if patch.Status != 200 && !(patch.Status == 422 && patch.JSON()["error"] == "validation_error") {
			t.Fatalf("PATCH racing DELETE: %d %s", patch.Status, patch.Body)
		}
		t.Logf("round %d: PATCH %d", i, patch.Status)
		for n, srv := range reps {
			g := srv.Do("GET", fmt.Sprintf("/api/v1/agents/%d/", agent), nil)
			var a struct{ Tools []int64 }
			if g.Status != 200 || json.Unmarshal(g.Body, &a) != nil {
				t.Fatalf("agent on replica %d: %d %s", n, g.Status, g.Body)
			}
			if slices.Contains(a.Tools, gone) || !slices.Contains(a.Tools, keep) {
				t.Fatalf("round %d: agent on replica %d has tools %v (kept %d, deleted %d)", i, n, a.Tools, keep, gone)
			}
		}
	}
}
