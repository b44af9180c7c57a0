package e2e

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCatalogCategoryIgnoresCase: catalog categories are lower-case slugs,
// so ?category=Search (as a UI shows the word) and a value with spaces
// around it name the category search, not a category with no tools. A
// cursor made under one spelling pages the list under another: it is the
// same list. An unknown category is still an empty list.
func TestCatalogCategoryIgnoresCase(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	names := func(path string) []string {
		t.Helper()
		var out []string
		for _, e := range fdList(t, c.ok(200, "GET", path, nil), "tools") {
			out = append(out, e["name"].(string))
		}
		return out
	}
	const base = "/api/v1/agents/tools/available/?category="
	want := names(base + "search")
	if !slices.Contains(want, "tavily") {
		t.Fatalf("?category=search lists %v", want)
	}
	for _, v := range []string{"Search", "SEARCH", " search ", "sEaRcH"} {
		if got := names(base + url.QueryEscape(v)); !slices.Equal(got, want) {
			t.Errorf("?category=%q lists %v, want %v", v, got, want)
		}
	}

	page := c.ok(200, "GET", base+"Developer&limit=1", nil)
	next, _ := page["next_cursor"].(string)
	if next == "" {
		t.Fatalf("?category=Developer&limit=1: no next_cursor: %v", page)
	}
	c.ok(200, "GET", base+"developer&limit=1&cursor="+url.QueryEscape(next), nil)

	if got := names(base + "no-such-category"); len(got) != 0 {
		t.Errorf("an unknown category lists %v", got)
	}
}

// TestCatalogNameSuggested: catalog names are lower-case slugs, and one
// given in another case or with spaces around it ("Tavily") is still a 404
// (one name per tool, on every route that takes one), whose message now
// names the tool it most likely means.
func TestCatalogNameSuggested(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/agents/tools/available/Tavily", nil},
		{"GET", "/api/v1/agents/tools/available/%20tavily", nil},
		{"POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "TAVILY"}},
		{"POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily\n"}},
	} {
		m := c.fail(404, "not_found", tc.method, tc.path, tc.body)
		if msg, _ := m["message"].(string); !strings.HasSuffix(msg, `; did you mean "tavily"?`) {
			t.Errorf("%s %s %v: %q, want it to suggest tavily", tc.method, tc.path, tc.body, msg)
		}
	}
	m := c.fail(404, "not_found", "GET", "/api/v1/agents/tools/available/nothing-like-it", nil)
	if m["message"] != `The catalog has no tool named "nothing-like-it".` {
		t.Errorf("no suggestion: %v", m["message"])
	}
}
