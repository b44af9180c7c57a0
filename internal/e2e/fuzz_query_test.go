package e2e

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// FuzzListQuery sends fuzzed query strings to the list endpoints (agents,
// tools, the call log, the catalog), raw on the request line. Every answer
// is 200 with the list and next_cursor, or a typed 400 or 422 (with fields)
// in the error envelope; never 500.
func FuzzListQuery(f *testing.F) {
	srv := testserver.Start(f, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	for i := 0; i < 3; i++ {
		if r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": fmt.Sprint("a", i)}); r.Status != 201 {
			f.Fatalf("agent: %d %s", r.Status, r.Body)
		}
		if r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"}); r.Status != 201 {
			f.Fatalf("tool: %d %s", r.Status, r.Body)
		}
	}
	page := httptest.NewServer(&fzCounter{})
	f.Cleanup(page.Close)
	for i := 0; i < 6; i++ { // log entries of tools 1 and 2
		r := srv.Do("POST", callPath, map[string]any{"tool": 1 + i%2, "action": "fetch_page", "arguments": map[string]any{"url": page.URL + "/page"}})
		if r.Status != 200 {
			f.Fatalf("call: %d %s", r.Status, r.Body)
		}
	}
	if r := srv.Do("GET", "/api/v1/agents/custom-tools/calls/?tool=2", nil); len(r.JSON()["calls"].([]any)) != 3 {
		f.Fatalf("call log: %s", r.Body)
	}
	lists := []struct{ path, field string }{
		{"/api/v1/agents/", "agents"},
		{"/api/v1/agents/custom-tools/", "tools"},
		{"/api/v1/agents/custom-tools/calls/", "calls"},
		{"/api/v1/agents/tools/available/", "tools"},
	}
	var cursors []string
	for _, q := range []string{"?limit=1", "?limit=1&tool=1"} {
		for _, l := range lists {
			r := srv.Do("GET", l.path+q, nil)
			if c, ok := r.JSON()["next_cursor"].(string); ok {
				cursors = append(cursors, c)
			}
		}
	}
	seeds := []string{
		"", "limit=1", "limit=200", "limit=0", "limit=201", "limit=-1", "limit=", "limit=1e3", "limit=%31", "limit=+1",
		"limit=01", "limit=99999999999999999999", "limit=1.0", "limit=0x10", "limit=1&limit=1", "limit=1;cursor=x",
		"cursor=", "cursor=garbage", "cursor=%ff", "cursor=%00", "cursor=" + strings.Repeat("A", 5000),
		"tool=1", "tool=", "tool=01", "tool=+1", "tool=-1", "tool=0", "tool=9223372036854775807", "tool=9223372036854775808",
		"tool=abc", "tool=1&tool=2", "tool=%31", "category=search", "category=", "category=%e2%80%ae", "%zz=1", "=1", "&&",
		"a=%", "a=%0", "\xff=1", "limit=\xff", "limit=1#frag", "limit=1%20", "limit=%E2%80%8B1", "x=" + strings.Repeat("y", 9000),
		"limit=2&tool=1", "limit=1&cursor=x&tool=1&category=search",
	}
	for _, c := range cursors {
		seeds = append(seeds, "cursor="+c, "limit=1&cursor="+c, "tool=1&cursor="+c, "tool=2&cursor="+c, "cursor="+c+"x",
			"cursor="+c[:len(c)/2])
	}
	for i, s := range seeds {
		for li := range lists {
			if (i+li)%2 == 0 || strings.Contains(s, "cursor=") {
				f.Add(uint8(li), s)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, query string) {
		l := lists[int(which)%len(lists)]
		// The request line ends at a space or line break: send those escaped.
		q := strings.NewReplacer(" ", "%20", "\r", "%0D", "\n", "%0A", "\t", "%09").Replace(query)
		target := l.path
		if q != "" {
			target += "?" + q
		}
		req := fzRequest("GET", target, srv.Key, nil, false)
		a := fzRaw(t, addr, req)
		m := fzCheck(t, req, a, 200, 400, 422)
		if a.Status != 200 {
			return
		}
		items, ok := m[l.field].([]any)
		if !ok {
			t.Fatalf("200 without %s: %s", l.field, a.Body)
		}
		if _, ok := m["next_cursor"]; !ok {
			t.Fatalf("200 without next_cursor: %s", a.Body)
		}
		// A list answered is the one asked for: no longer than its limit,
		// and of the filtered tool only.
		vs, err := url.ParseQuery(q)
		if err != nil {
			t.Fatalf("200 for a query that does not parse (%v): %q", err, target)
		}
		limit := 50
		if v := vs.Get("limit"); v != "" {
			if limit, err = strconv.Atoi(v); err != nil {
				t.Fatalf("200 for limit %q", v)
			}
		}
		if len(items) > limit {
			t.Fatalf("%d items for limit %d: %q", len(items), limit, target)
		}
		if tool := vs.Get("tool"); tool != "" && l.field == "calls" {
			for _, it := range items {
				if got := fmt.Sprint(it.(map[string]any)["tool"]); got != tool {
					t.Fatalf("?tool=%s lists a call of tool %s", tool, got)
				}
			}
		}
	})
}
