package e2e

import (
	"bytes"
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCLIAudit2ServeRefusesBadBases: quiver serve refuses, before it
// listens, a QUIVER_PUBLIC_URL or QUIVER_TAVILY_BASE_URL with a query or
// fragment (a path appended to it would land inside them: the OAuth
// redirect URI of http://q/?a=b was http://q/?a=b/api/v1/oauth/callback)
// and a QUIVER_BODY_LIMIT past 1 GiB (the largest int64 overflowed the MCP
// endpoint's reader, and every agent MCP message read as empty, 400). Each
// refusal names the variable on stderr, prints nothing on stdout, exits 1.
func TestCLIAudit2ServeRefusesBadBases(t *testing.T) {
	bin := quiverBinary(t)
	for _, tc := range []struct{ name, value, says string }{
		{"QUIVER_PUBLIC_URL", "https://q.example.com/?tenant=a", "must not have a query"},
		{"QUIVER_PUBLIC_URL", "https://q.example.com/#x", "must not have a fragment"},
		{"QUIVER_PUBLIC_URL", "https://me:pw@q.example.com", "must not carry credentials"},
		{"QUIVER_TAVILY_BASE_URL", "https://tavily.example.com/?v=2", "must not have a query"},
		{"QUIVER_BODY_LIMIT", "9223372036854775807", "from 1024 to 1073741824"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve")
			cmd.Env = fdEnv(map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_ADDR": "127.0.0.1:0", tc.name: tc.value})
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("quiver serve with %s=%q started instead of refusing it; stdout:\n%s", tc.name, tc.value, out.String())
			}
			if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
				t.Fatalf("exit code %d (%v), want 1", code, err)
			}
			if e := errOut.String(); !strings.Contains(e, tc.name+": ") || !strings.Contains(e, tc.says) {
				t.Errorf("stderr does not name %s and say %q:\n%s", tc.name, tc.says, e)
			}
			if out.Len() != 0 {
				t.Errorf("stdout is not empty: %q", out.String())
			}
		})
	}
}

// TestCLIAudit2RedirectUnderAPath: behind a proxy that serves Quiver under
// a path, QUIVER_PUBLIC_URL with that path (and a trailing slash) makes the
// OAuth redirect URI that path's /api/v1/oauth/callback, with one slash.
func TestCLIAudit2RedirectUnderAPath(t *testing.T) {
	c := fdStart(t, testserver.Options{Env: map[string]string{
		"QUIVER_PUBLIC_URL":                 "https://gw.example.com/quiver/",
		"QUIVER_OAUTH_GITHUB_CLIENT_ID":     "cid",
		"QUIVER_OAUTH_GITHUB_CLIENT_SECRET": "csecret",
	}})
	tool := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "github-mcp"})
	step, _ := tool["next_configuration_step"].(map[string]any)
	raw, _ := step["authorization_url"].(string)
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		t.Fatalf("authorization_url %q: %v; tool %v", raw, err, tool)
	}
	if got, want := u.Query().Get("redirect_uri"), "https://gw.example.com/quiver/api/v1/oauth/callback"; got != want {
		t.Errorf("redirect_uri = %q, want %q", got, want)
	}
}
