package e2e

import (
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCallUnknownToolNameQuoted: a call naming a tool the account has not
// connected says which name in quotes, so a stray space shows, and cut to
// 64 characters, so a huge name is not echoed whole.
func TestCallUnknownToolNameQuoted(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for name, want := range map[string]string{
		" browser":               `no connected tool named " browser"`,
		strings.Repeat("x", 500): `no connected tool named "` + strings.Repeat("x", 64) + `…"`,
	} {
		r := srv.Do("POST", callPath, map[string]any{"tool": name, "action": "fetch_page", "arguments": map[string]any{}})
		f := fdFields(t, fdWantError(t, r, 422, "validation_error"))
		if f["tool"] != want {
			t.Errorf("%.20q: fields.tool = %q, want %q", name, f["tool"], want)
		}
	}
}
