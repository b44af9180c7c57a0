package toolconfig

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// TestToolOfAnEntryThisServerLacks: a tool whose catalog entry this
// server's catalog does not have (a replica of a newer Quiver connected it,
// mid rolling upgrade) was a 500 on every read, configuration step and
// call. It is 503 unavailable with Retry-After, naming the entry: nothing
// was done, and a replica of that version can serve it.
func TestToolOfAnEntryThisServerLacks(t *testing.T) {
	s, st := overtakenService(t)
	st.tools[7] = store.Tool{ID: 7, AccountID: 1, CatalogName: "notion", State: string(AwaitingInput), Version: 1}
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"get":     func() error { _, err := s.Get(ctx, 1, 7); return err },
		"provide": func() error { _, err := s.Provide(ctx, 1, 7, map[string]json.RawMessage{}); return err },
		"reset":   func() error { _, err := s.Reset(ctx, 1, 7); return err },
		"resolve": func() error { _, err := s.Resolve(ctx, 1, 7); return err },
	} {
		err := f()
		p, ok := problem.As(err)
		if !ok || p.Code != problem.Unavailable || p.HTTPStatus() != 503 || p.RetryAfter < 1 {
			t.Errorf("%s: %v, want 503 unavailable with Retry-After", name, p)
		}
	}
	// Another account's ID is still not found.
	if _, err := s.Get(ctx, 2, 7); err == nil {
		t.Error("another account's tool was read")
	} else if p, _ := problem.As(err); p == nil || p.Code != problem.NotFound {
		t.Errorf("another account's tool: %v, want not_found", err)
	}
}
