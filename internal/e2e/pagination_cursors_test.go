package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// A cursor continues the list that made it, under the filters it was made
// under, and no other: given to another list it would page that list from
// an unrelated position, so it is 422 with fields.cursor. Cursors of the
// old unnamed form ("id:N"), which clients mid-walk hold across an upgrade,
// still page any list.
func TestCursorsAreBoundToTheirList(t *testing.T) {
	for name, opts := range map[string]testserver.Options{"postgres": {Postgres: true}, "embedded": {}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setupCalls(t, opts)
			other := connectHTTPTool(t, e.srv.URL, e.srv.Key, e.tool.URL)
			for i := 0; i < 3; i++ {
				for _, tool := range []int64{e.id, other} {
					body := map[string]any{"tool": tool, "action": "get", "arguments": map[string]any{"path": fmt.Sprintf("/page-%d", i)}}
					if r := e.call(body); r.Status != 200 {
						t.Fatalf("call: %d %s", r.Status, r.Body)
					}
				}
				if r := e.srv.Do("POST", "/api/v1/agents/", map[string]any{"name": fmt.Sprintf("pager-%d", i)}); r.Status != 201 {
					t.Fatalf("create agent: %d %s", r.Status, r.Body)
				}
			}

			const calls = "/api/v1/agents/custom-tools/calls/"
			lists := []struct{ path, field string }{
				{"/api/v1/agents/", "agents"},
				{"/api/v1/agents/custom-tools/", "tools"},
				{calls, "calls"},
				{fmt.Sprintf("%s?tool=%d", calls, e.id), "calls"},
				{fmt.Sprintf("%s?tool=%d", calls, other), "calls"},
				{"/api/v1/agents/tools/available/", "tools"},
				{"/api/v1/agents/tools/available/?category=developer", "tools"},
				{"/api/v1/agents/tools/available/?category=search", "tools"},
			}
			get := func(path string, args ...string) *testserver.Response {
				t.Helper()
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				return e.srv.Do("GET", path+sep+strings.Join(args, "&"), nil)
			}
			// items is the list field of a 200 as raw JSON, to compare pages.
			items := func(r *testserver.Response, field string) (all []string, next string) {
				t.Helper()
				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal(r.Body, &m); err != nil {
					t.Fatal(err)
				}
				var list []json.RawMessage
				if err := json.Unmarshal(m[field], &list); err != nil {
					t.Fatalf("%s: %v in %s", field, err, r.Body)
				}
				for _, it := range list {
					all = append(all, string(it))
				}
				_ = json.Unmarshal(m["next_cursor"], &next) // null leaves it ""
				return all, next
			}

			firsts := make([]string, len(lists))
			for i, l := range lists {
				_, firsts[i] = items(get(l.path, "limit=1"), l.field)
				if firsts[i] == "" {
					t.Fatalf("%s?limit=1: no next_cursor", l.path)
				}
			}

			t.Run("refused by another list", func(t *testing.T) {
				for i, from := range lists {
					for j, to := range lists {
						if i == j {
							continue
						}
						r := get(to.path, "limit=1", "cursor="+firsts[i])
						if r.Status != 422 {
							t.Errorf("cursor of %s given to %s: %d %s, want 422", from.path, to.path, r.Status, r.Body)
							continue
						}
						fdWantFields(t, r, "validation_error", "cursor")
					}
				}
			})

			t.Run("refused without the filter it was made under", func(t *testing.T) {
				_, c := items(get(lists[3].path, "limit=1"), "calls")
				for _, q := range [][]string{
					{"cursor=" + c}, // no ?tool=
					{fmt.Sprintf("tool=%d", other), "cursor=" + c}, // another tool
				} {
					fdWantFields(t, get(calls, q...), "validation_error", "cursor")
				}
				// The refusal names the cause, in the wording of a bad cursor.
				r := get(calls, "cursor="+c)
				f := fdWantFields(t, r, "validation_error", "cursor")
				if msg, _ := f["cursor"].(string); !strings.Contains(msg, "another list") || r.JSON()["message"] != "The list parameters are not valid." {
					t.Errorf("a cursor of another list: %s", r.Body)
				}
				// A bad ?tool= and a cursor made under another are both named.
				fdWantFields(t, get(calls, "tool=x", "cursor="+c), "validation_error", "tool", "cursor")
			})

			t.Run("pages to the end", func(t *testing.T) {
				for _, l := range lists {
					whole, next := items(get(l.path, "limit=200"), l.field)
					if next != "" {
						t.Fatalf("%s: more than 200 items", l.path)
					}
					var walked []string
					cursor := ""
					for pages := 0; ; pages++ {
						if pages > len(whole) {
							t.Fatalf("%s: the walk does not end", l.path)
						}
						args := []string{"limit=1"}
						if cursor != "" {
							args = append(args, "cursor="+cursor)
						}
						page, next := items(get(l.path, args...), l.field)
						walked = append(walked, page...)
						if cursor = next; cursor == "" {
							break
						}
					}
					if strings.Join(walked, "\n") != strings.Join(whole, "\n") || len(whole) < 2 {
						t.Errorf("%s: walked %d items one at a time, the whole list is %d", l.path, len(walked), len(whole))
					}
				}
			})

			t.Run("an old-form cursor pages any list", func(t *testing.T) {
				old := func(n int64) string { return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "id:%d", n)) }
				for _, l := range lists {
					whole, _ := items(get(l.path, "limit=200"), l.field)
					got, _ := items(get(l.path, "limit=200", "cursor="+old(0)), l.field)
					if strings.Join(got, "\n") != strings.Join(whole, "\n") {
						t.Errorf("%s with an old cursor at the start: %d items, want %d", l.path, len(got), len(whole))
					}
				}
				// Past the first item: the old cursors held the row's ID
				// (the catalog's, its position), as the new ones do.
				for i, l := range lists[:2] {
					first, _ := items(get(l.path, "limit=1"), l.field)
					var row struct{ ID int64 }
					if err := json.Unmarshal([]byte(first[0]), &row); err != nil {
						t.Fatal(err)
					}
					want, _ := items(get(l.path, "limit=200", "cursor="+firsts[i]), l.field)
					got, _ := items(get(l.path, "limit=200", "cursor="+old(row.ID)), l.field)
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Errorf("%s with an old cursor after %d: %v, want %v", l.path, row.ID, got, want)
					}
				}
				want, _ := items(get(lists[5].path, "cursor="+firsts[5]), "tools")
				got, _ := items(get(lists[5].path, "cursor="+old(1)), "tools")
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("the catalog with an old cursor at 1: %d entries, want %d", len(got), len(want))
				}
			})
		})
	}
}
