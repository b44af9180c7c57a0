package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// FuzzResourceWrites sends fuzzed bodies to the write endpoints of agents
// and tools: POST /agents/, PATCH /agents/{id}/, POST /agents/custom-tools/
// and provide-config of an http-request tool at its first and its second
// step and of a tavily tool. Every answer is a status the endpoint lists in
// the error envelope, a 422 carries fields, and a refused PATCH or
// provide-config changes nothing: the resource reads back byte for byte as
// before.
func FuzzResourceWrites(f *testing.F) {
	srv := testserver.Start(f, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	mk := func(name string) int64 {
		r := testserver.Do(f, srv.URL, srv.Key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": name})
		if r.Status != 201 {
			f.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
		return int64(r.JSON()["id"].(float64))
	}
	step1, step2, tavily := mk("http-request"), mk("http-request"), mk("tavily")
	baseURL := map[string]any{"user_response": map[string]any{"base_url": "http://127.0.0.1:19261"}}
	cfgPath := func(id int64) string { return fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id) }
	if r := srv.Do("POST", cfgPath(step2), baseURL); r.Status != 200 {
		f.Fatalf("step 1: %d %s", r.Status, r.Body)
	}
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "goal": "g", "tools": []int64{step1}, "status": "draft"})
	if r.Status != 201 {
		f.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agent := int64(r.JSON()["id"].(float64))

	type target struct {
		method, path string
		statuses     []int
		get          string             // the resource a refusal must leave as it was
		created      string             // the collection a 201 was created in
		restore      func(t testing.TB) // puts the resource back at its step after a 200
	}
	reset := func(id int64, redo bool) func(t testing.TB) {
		return func(t testing.TB) {
			if r := testserver.Do(t, srv.URL, srv.Key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil); r.Status != 200 {
				t.Fatalf("reset: %d %s", r.Status, r.Body)
			}
			if redo {
				if r := testserver.Do(t, srv.URL, srv.Key, "POST", cfgPath(id), baseURL); r.Status != 200 {
					t.Fatalf("redo step 1: %d %s", r.Status, r.Body)
				}
			}
		}
	}
	toolPath := func(id int64) string { return fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id) }
	agentPath := fmt.Sprintf("/api/v1/agents/%d/", agent)
	targets := []target{
		{method: "POST", path: "/api/v1/agents/", statuses: []int{201, 400, 413, 422}, created: "/api/v1/agents/"},
		{method: "PATCH", path: agentPath, statuses: []int{200, 400, 413, 422}, get: agentPath},
		{method: "POST", path: "/api/v1/agents/custom-tools/", statuses: []int{201, 400, 404, 413, 422}, created: "/api/v1/agents/custom-tools/"},
		{method: "POST", path: cfgPath(step1), statuses: []int{200, 400, 413, 422}, get: toolPath(step1), restore: reset(step1, false)},
		{method: "POST", path: cfgPath(step2), statuses: []int{200, 400, 413, 422}, get: toolPath(step2), restore: reset(step2, true)},
		{method: "POST", path: cfgPath(tavily), statuses: []int{200, 400, 413, 422}, get: toolPath(tavily), restore: reset(tavily, false)},
	}

	seeds := []string{
		`{"name":"n","goal":"g","tools":[],"status":"active"}`,
		fmt.Sprintf(`{"name":"n","tools":[%d,%d],"status":"paused"}`, step1, tavily),
		`{"tools":[999999]}`, `{"tools":[1,1]}`, `{"tools":[-1]}`, `{"tools":[1.5]}`, `{"tools":["1"]}`, `{"tools":null}`,
		`{"tools":[12345678901234567890]}`, `{"tools":[1e2]}`, `{"status":"deleted"}`, `{"status":""}`, `{"status":null}`,
		`{"name":""}`, `{"name":"\u0000"}`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}", `{"name":1}`, `{"name":"a","name":"b"}`,
		`{"name":"` + strings.Repeat("n", 5000) + `"}`, `{"goal":"` + strings.Repeat("g", 70000) + `"}`,
		`{"mcp_tool":"tavily"}`, `{"mcp_tool":"tavily","name":"label"}`, `{"mcp_tool":"nope"}`, `{"mcp_tool":""}`,
		`{"mcp_tool":["tavily"]}`, `{"mcp_tool":"TAVILY"}`, `{"mcp_tool":"tavily","name":"\u0000"}`,
		`{"user_response":{"base_url":"http://127.0.0.1:19262/x"}}`, `{"user_response":{"base_url":"ftp://x"}}`,
		`{"user_response":{"base_url":""}}`, `{"user_response":{"base_url":1}}`, `{"user_response":{}}`, `{"user_response":null}`,
		`{"user_response":[]}`, `{"user_response":"x"}`, `{}`,
		`{"user_response":{"auth_type":"bearer","token":"t"}}`, `{"user_response":{"auth_type":"header","header_name":"X-K","token":"t"}}`,
		`{"user_response":{"auth_type":"header","header_name":"Bad Name:","token":"t"}}`, `{"user_response":{"auth_type":"none"}}`,
		`{"user_response":{"auth_type":"bearer","token":"a\nb"}}`, `{"user_response":{"auth_type":"other"}}`,
		`{"user_response":{"TAVILY_API_KEY":"tvly-abc"}}`, `{"user_response":{"TAVILY_API_KEY":"nope"}}`,
		`{"user_response":{"TAVILY_API_KEY":"tvly-\u0000"}}`, `{"user_response":{"TAVILY_API_KEY":"tvly-` + strings.Repeat("k", 9000) + `"}}`,
		`{"user_response":{"base_url":"http://127.0.0.1:19262","base_url":"http://127.0.0.1:19263"}}`,
		"\xef\xbb\xbf{}", `{} x`, `[]`, `null`, ``, `{`, strings.Repeat("[", 20000), `{"a":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat("}", 10002),
		`{"user_response":{"base_url":"http://127.0.0.1:19262"},"extra":1e999999}`,
	}
	for i, s := range seeds {
		for op := range targets {
			if (i+op)%3 == 0 || op == 1 || op >= 3 {
				f.Add(uint8(op), []byte(s), uint8(i%2))
			}
		}
	}

	for op := range targets {
		f.Add(uint8(op), []byte(`{"name":"pad","user_response":{"base_url":"http://127.0.0.1:19264"}}`+strings.Repeat(" ", op%3)), uint8(4|op%2*2))
	}
	f.Fuzz(func(t *testing.T, op uint8, body []byte, flags uint8) {
		tg := targets[int(op)%len(targets)]
		var before []byte
		if tg.get != "" {
			g := testserver.Do(t, srv.URL, srv.Key, "GET", tg.get, nil)
			if g.Status != 200 {
				t.Fatalf("GET %s: %d %s", tg.get, g.Status, g.Body)
			}
			before = g.Body
		}
		var h []string
		if flags&1 == 0 {
			h = append(h, "Content-Type", "application/json")
		}
		req := fzRequest(tg.method, tg.path, srv.Key, fzPadded(body, flags&4 != 0), flags&2 != 0, h...)
		a := fzRaw(t, addr, req)
		m := fzCheck(t, req, a, tg.statuses...)
		switch {
		case a.Status == 201:
			id, ok := m["id"].(float64)
			if !ok {
				t.Fatalf("201 without id: %s", a.Body)
			}
			got := testserver.Do(t, srv.URL, srv.Key, "GET", fmt.Sprintf("%s%d/", tg.created, int64(id)), nil)
			if got.Status != 200 || !bytes.Equal(got.Body, a.Body) {
				t.Fatalf("created %s reads back as %d %s", a.Body, got.Status, got.Body)
			}
			if d := testserver.Do(t, srv.URL, srv.Key, "DELETE", fmt.Sprintf("%s%d/", tg.created, int64(id)), nil); d.Status != 204 {
				t.Fatalf("delete: %d %s", d.Status, d.Body)
			}
		case a.Status == 200:
			got := testserver.Do(t, srv.URL, srv.Key, "GET", tg.get, nil)
			if !bytes.Equal(got.Body, a.Body) {
				t.Fatalf("%s answered %s but reads back as %s", tg.path, a.Body, got.Body)
			}
			if tg.restore != nil {
				tg.restore(t)
			}
		case tg.get != "":
			after := testserver.Do(t, srv.URL, srv.Key, "GET", tg.get, nil)
			if !bytes.Equal(after.Body, before) {
				t.Fatalf("refused %d %s changed %s:\nbefore %s\nafter  %s\nrequest %q", a.Status, a.Body, tg.get, before, after.Body, fzClip(req))
			}
		}
	})
}
