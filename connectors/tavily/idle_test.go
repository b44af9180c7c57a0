package tavily

import (
	"net/http"
	"testing"

	"github.com/quiverhq/quiver/internal/egress"
)

// TestIdleTimeout: the connector's own transport reuses an idle connection
// for egress.DefaultIdleTimeout, as every other connector's does, not
// net/http's 90 s: its calls are POSTs, which net/http does not send again
// when they were written into a connection the server was closing.
func TestIdleTimeout(t *testing.T) {
	tr, ok := New(Options{}).client.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want *http.Transport", New(Options{}).client.Transport)
	}
	if tr.IdleConnTimeout != egress.DefaultIdleTimeout {
		t.Errorf("idle timeout %v, want %v", tr.IdleConnTimeout, egress.DefaultIdleTimeout)
	}
}
