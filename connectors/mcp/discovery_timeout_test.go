package mcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// TestActionsDiscoveryTimeout: a server that does not finish tools/list in
// DiscoveryTimeout fails Actions with KindUnreachable (the listing changed
// nothing) well before the caller's own deadline, whether it stalls on one
// page or is merely slow across all of them; its session stays usable.
func TestActionsDiscoveryTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	cases := map[string]func(w http.ResponseWriter, r *http.Request, next http.Handler){
		// The first page never comes.
		"stalled": func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			<-r.Context().Done()
		},
		// Each of the five pages comes within the timeout; all of them
		// together do not.
		"slow pages": func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(timeout / 2):
			}
			next.ServeHTTP(w, r)
		},
	}
	for name, onList := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var healthy atomic.Bool
			hs := interceptedServer(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				if healthy.Load() {
					next.ServeHTTP(w, r)
					return
				}
				onList(w, r, next)
			})
			c := setup(t, &Options{AllowPrivate: true, DiscoveryTimeout: timeout})
			tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry,
				Config: map[string]string{"url": hs.URL + "/mcp"}, Version: 1}

			start := time.Now()
			_, err := c.Actions(ctxFor(t, 10*time.Second), tool)
			elapsed := time.Since(start)
			wantKind(t, err, connectors.KindUnreachable)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not list its tools") {
				t.Errorf("err = %v, want a discovery timeout", err)
			}
			if elapsed < timeout || elapsed > timeout+3*time.Second {
				t.Errorf("failed after %v, want about %v", elapsed, timeout)
			}

			healthy.Store(true)
			actions, err := c.Actions(ctxFor(t, 10*time.Second), tool)
			if err != nil || len(actions) != 5 {
				t.Fatalf("once the server answers: %d actions, err = %v; want 5", len(actions), err)
			}
		})
	}
}
