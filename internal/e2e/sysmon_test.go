package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestServeSysmon: quiver serve runs with GODEBUG's schedtrace set (see
// cmd/quiver/sysmon.go), after the operator's own GODEBUG settings, in the
// process that was started; an operator who names schedtrace keeps theirs.
func TestServeSysmon(t *testing.T) {
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
		if got := procGODEBUG(t, p.cmd.Process.Pid); !slices.Contains(got, tc.want) {
			t.Errorf("GODEBUG=%s: the server's environment has %q, want %q", tc.given, got, tc.want)
		}
		p.kill()
	}
}

// TestServeSysmonStartedByAnotherName: started by a symlink's path, serve
// keeps the name it was started by (ps, pkill -x) after running itself
// again.
func TestServeSysmonStartedByAnotherName(t *testing.T) {
	link := filepath.Join(t.TempDir(), "quiver-blue")
	if err := os.Symlink(quiverBinary(t), link); err != nil {
		t.Fatal(err)
	}
	p := startProcAs(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "GODEBUG": ""}, link, "serve")
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.cmd.Process.Pid))
	env := procGODEBUG(t, p.cmd.Process.Pid)
	if strings.TrimSpace(string(comm)) != "quiver-blue" || !slices.Equal(env, []string{"GODEBUG=schedtrace=2147483647"}) {
		t.Fatalf("process name %q, %q", comm, env)
	}
}

// TestServeSysmonUnderATracer: under a tracer (a debugger, strace), which
// would not follow the exec, serve does not run itself again, and says
// why it runs without the setting.
func TestServeSysmonUnderATracer(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace here")
	}
	p := startProcAs(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "GODEBUG": ""}, strace, "-o", "/dev/null", quiverBinary(t), "serve")
	// p is strace; quiver serve is its child, ended here (strace would
	// leave it running).
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.cmd.Process.Pid, p.cmd.Process.Pid))
	pid, err := strconv.Atoi(strings.TrimSpace(string(children)))
	if err != nil {
		t.Fatalf("strace's children: %q", children)
	}
	env := procGODEBUG(t, pid)
	syscall.Kill(pid, syscall.SIGKILL)
	if !slices.Equal(env, []string{"GODEBUG="}) {
		t.Errorf("under a tracer the server's environment has %q, want GODEBUG as given", env)
	}
	testserver.Eventually(t, 5*time.Second, "the reason in the log", func() bool {
		return strings.Contains(p.logText(), `"reason":"a debugger or tracer is attached"`)
	})
}

// procGODEBUG is the GODEBUG entries of process pid's environment.
func procGODEBUG(t *testing.T, pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
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
