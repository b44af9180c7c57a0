package e2e

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestServeSysmon: quiver serve runs with GODEBUG's schedtrace set (see
// cmd/quiver/sysmon.go), after the operator's own GODEBUG settings, in the
// process that was started; an operator who names schedtrace keeps theirs.
func TestServeSysmon(t *testing.T) {
	godebug := func(p *proc) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for kv := range strings.SplitSeq(string(b), "\x00") {
			if strings.HasPrefix(kv, "GODEBUG=") {
				out = append(out, kv)
			}
		}
		return out
	}
	for _, tc := range []struct{ given, want string }{
		{"", "GODEBUG=schedtrace=2147483647"},
		{"gctrace=0", "GODEBUG=gctrace=0,schedtrace=2147483647"},
		{"schedtrace=0", "GODEBUG=schedtrace=0"},
	} {
		p := startProc(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "GODEBUG": tc.given})
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GODEBUG=%s: healthz: %v %v", tc.given, err, resp)
		}
		resp.Body.Close()
		if got := godebug(p); !slices.Contains(got, tc.want) {
			t.Errorf("GODEBUG=%s: the server's environment has %q, want %q", tc.given, got, tc.want)
		}
		p.kill()
	}
}
