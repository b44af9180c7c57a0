package e2e

import (
	"net/http"
	"testing"
)

// TestPprofListener: QUIVER_PPROF_ADDR serves runtime profiles on a
// listener of its own, and nothing of them shows on the API's.
func TestPprofListener(t *testing.T) {
	addr := freeAddr(t)
	p := startProc(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_PPROF_ADDR": addr})
	status := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status("http://" + addr + "/debug/pprof/cmdline"); s != 200 {
		t.Errorf("pprof listener: %d, want 200", s)
	}
	if s := status(p.URL + "/debug/pprof/cmdline"); s != 404 {
		t.Errorf("API listener /debug/pprof/cmdline: %d, want 404", s)
	}
}
