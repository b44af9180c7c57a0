package secrets

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Two processes started at once on a new data directory (quiver serve and
// quiver keys create, say) both find no key file. The one that loses the
// race must read the winner's key, never a file it has created but not yet
// written, and both must end up with the same key.
func TestKeyFileRaceGivesOneKey(t *testing.T) {
	dir := t.TempDir()
	for round := range 100 {
		path := filepath.Join(dir, fmt.Sprint(round), "secret.key")
		const n = 4
		keys := make([][]byte, n)
		errs := make([]error, n)
		made := make([]bool, n)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range n {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				keys[i], made[i], errs[i] = LoadOrCreateKeyFile(path)
			}()
		}
		start.Done()
		done.Wait()
		creators := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: load %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: two loads gave different keys", round)
			}
			if made[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Fatalf("round %d: %d loads say they created the file, want 1", round, creators)
		}
	}
}
