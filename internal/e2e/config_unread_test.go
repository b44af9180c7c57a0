package e2e

import (
	"strings"
	"testing"
)

// TestMisspeltVariableWarned: a QUIVER_* variable Quiver does not read is
// warned of, with the name it likely meant, instead of the default
// silently staying in force; the command still runs.
func TestMisspeltVariableWarned(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_CALLTIMEOUT": "5s"}, "migrate", "status")
	if err != nil {
		t.Fatalf("migrate status: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "QUIVER_CALLTIMEOUT is set, but Quiver reads no such variable: did you mean QUIVER_CALL_TIMEOUT?") {
		t.Fatalf("no warning for QUIVER_CALLTIMEOUT; stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "pending") && !strings.Contains(stdout, "applied") {
		t.Fatalf("migrate status printed no status:\n%s", stdout)
	}
	_, stderr, err = fdRun(t, map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_CALL_TIMEOUT": "5s"}, "migrate", "status")
	if err != nil || strings.Contains(stderr, "no such variable") {
		t.Fatalf("variables all read: %v, stderr:\n%s", err, stderr)
	}
}
