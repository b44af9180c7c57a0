package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/config"
)

// TestREADMENamesEveryVariable: the README's Configuration table is what an
// operator sets Quiver up from. Every variable the server reads is a row
// of it, and every row names a variable the server reads: one left out
// cannot be found, one that is not read (renamed, removed) is set to no
// effect, which Quiver only warns about.
func TestREADMENamesEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "| variable | default | meaning |")
	if start < 0 {
		t.Fatal("README has no configuration table")
	}
	section = section[start:]
	if end := strings.Index(section, "\n\n"); end > 0 {
		section = section[:end]
	}
	documented := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_<>]*)`(?: / `(_[A-Z_]+)`)?")
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
		if alt := m[2]; alt != "" { // `…_CLIENT_ID` / `_CLIENT_SECRET`: the same but its last words
			words := strings.Split(m[1], "_")
			documented[strings.Join(words[:len(words)-strings.Count(alt, "_")], "_")+alt] = true
		}
	}

	// The families (a provider's or a catalog entry's name in the
	// variable's) are read from the environment as a whole: each documented
	// one is set, and must be taken.
	var environ []string
	for name := range documented {
		name = strings.Replace(name, "<PROVIDER>", "GITHUB", 1)
		name = strings.Replace(name, "<ENTRY>", "SENTRY", 1)
		if !strings.Contains(name, "GITHUB") && !strings.Contains(name, "MCP_URL_") {
			continue
		}
		value := "x"
		switch {
		case strings.HasSuffix(name, "_URL") || strings.Contains(name, "_URL_"):
			value = "https://as.example/" + strings.ToLower(name)
		case strings.HasSuffix(name, "_TOKEN_AUTH"):
			value = "client_secret_basic"
		}
		environ = append(environ, name+"="+value)
	}
	set := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	read := map[string]bool{}
	getenv := func(name string) string { read[name] = true; return set[name] }
	cfg, err := config.Parse(getenv, environ)
	if err != nil {
		t.Fatalf("Parse of every documented family variable: %v", err)
	}
	if len(cfg.Unread) > 0 {
		t.Errorf("Parse left documented variables unread: %v", cfg.Unread)
	}
	if o := cfg.OAuthClients["github"]; o.ClientID == "" || o.ClientSecret == "" || o.AuthURL == "" || o.TokenURL == "" || o.RevocationURL == "" || o.TokenAuth == "" {
		t.Errorf("a documented QUIVER_OAUTH_<PROVIDER>_ variable was not taken: %+v", o)
	}
	if cfg.MCPURLs["sentry"] == "" {
		t.Error("QUIVER_MCP_URL_<ENTRY> was not taken")
	}
	served := map[string]bool{}
	for name := range read {
		if !strings.HasPrefix(name, "QUIVER_") && !strings.HasSuffix(name, "_URL") {
			continue // PGDATABASE and the like, read to check DATABASE_URL, are libpq's own
		}
		served[name] = true
	}
	for name := range documented {
		if strings.Contains(name, "<") {
			served[name] = true // taken, as checked above
		}
	}
	for name := range served {
		if !documented[name] {
			t.Errorf("Quiver reads %s, which the README's configuration table does not name", name)
		}
	}
	var names []string
	for name := range documented {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !served[name] {
			t.Errorf("the README's configuration table names %s, which Quiver does not read", name)
		}
	}
}
