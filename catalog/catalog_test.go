package catalog_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

var update = flag.Bool("update", false, "rewrite testdata/catalog.golden.json")

func TestShippedCatalogLoads(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tavily", "browser", "http-request", "custom-mcp", "github-mcp", "sentry", "slack", "linear", "google"} {
		if _, ok := c.Get(name); !ok {
			t.Errorf("entry %q missing", name)
		}
	}
	if problems := catalog.Check(catalog.Embedded()); len(problems) > 0 {
		t.Errorf("Check found problems: %v", problems)
	}
}

func TestShippedCatalogContract(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	tav, _ := c.Get("tavily")
	step, ok := tav.Step(0)
	if !ok || step.ID != "api_key" || step.Title != "Tavily API key" {
		t.Fatalf("tavily step 0 = %+v", step)
	}
	f, ok := step.Field("TAVILY_API_KEY")
	if !ok || !f.Secret || !f.Required || f.Pattern != "^tvly-" || f.Label != "API key" {
		t.Fatalf("tavily field = %+v", f)
	}
	if _, ok := tav.Step(1); ok {
		t.Error("tavily has a second step")
	}
	for _, name := range []string{"search", "extract"} {
		a, ok := tav.Action(name)
		if !ok || !a.Retryable {
			t.Errorf("tavily %s: %+v", name, a)
		}
	}

	hr, _ := c.Get("http-request")
	for name, retryable := range map[string]bool{"get": true, "head": true, "put": true, "delete": true, "post": false, "patch": false} {
		a, ok := hr.Action(name)
		if !ok {
			t.Errorf("http-request %s missing", name)
			continue
		}
		if a.Retryable != retryable {
			t.Errorf("http-request %s retryable = %t", name, a.Retryable)
		}
		var schema struct {
			Type     string         `json:"type"`
			Required []string       `json:"required"`
			Props    map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(a.InputSchema, &schema); err != nil || schema.Type != "object" || len(schema.Props) != 4 {
			t.Errorf("http-request %s schema = %s (%v)", name, a.InputSchema, err)
		}
	}
	if _, i, ok := hr.StepByID("auth"); !ok || i != 1 {
		t.Errorf("http-request auth step at %d", i)
	}

	cm, _ := c.Get("custom-mcp")
	if cm.Type != catalog.TypeCustomMCP || !cm.Steps[0].Verify {
		t.Errorf("custom-mcp = %+v", cm)
	}
	g, _ := c.Get("google")
	if g.OAuth == nil || g.OAuth.ExtraAuthParams["access_type"] != "offline" || g.OAuth.ExtraAuthParams["prompt"] != "consent" {
		t.Errorf("google oauth = %+v", g.OAuth)
	}
	for _, e := range c.List("") {
		if e.Type == catalog.TypeMCP && (e.OAuth == nil || !e.OAuth.PKCE || e.MCPURL == "") {
			t.Errorf("%s: hosted MCP entry without PKCE oauth or mcp_url", e.Name)
		}
	}
}

func TestList(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	all := c.List("")
	for i := 1; i < len(all); i++ {
		if all[i-1].Name >= all[i].Name {
			t.Fatalf("List not sorted: %s before %s", all[i-1].Name, all[i].Name)
		}
	}
	search := c.List("search")
	if len(search) == 0 || len(search) >= len(all) {
		t.Fatalf("List(search) = %d of %d", len(search), len(all))
	}
	for _, e := range search {
		found := false
		for _, cat := range e.Categories {
			found = found || cat == "search"
		}
		if !found {
			t.Errorf("%s listed under search", e.Name)
		}
	}
	if got := c.List("no-such-category"); len(got) != 0 {
		t.Errorf("unknown category lists %d", len(got))
	}
}

// TestGolden pins the catalog as the API serializes it. Regenerate with
// go test ./catalog -update.
func TestGolden(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(map[string]any{"tools": c.List("")}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "catalog.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./catalog -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("catalog JSON differs from %s; run go test ./catalog -update and review the diff", path)
	}
}
