package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestTryLockRefusesWhileHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while held = %v, want ErrLocked", err)
	}
	unlock()
	again, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock once released: %v", err)
	}
	again()
}

// Another process sees the lock too: flock(1) exits 1 at once (-n) while
// this process holds it.
func TestLockHoldsAcrossProcesses(t *testing.T) {
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	path := filepath.Join(t.TempDir(), "l.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(bin, "-n", path, "true").Run(); err == nil {
		t.Fatal("another process took the lock while this one held it")
	}
	unlock()
	if out, err := exec.Command(bin, "-n", path, "true").CombinedOutput(); err != nil {
		t.Fatalf("another process could not take the released lock: %v %s", err, out)
	}
	_ = os.Remove(path)
}
