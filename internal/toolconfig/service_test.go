package toolconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// racingStore keeps one account's tools in memory, and every configuration
// update loses to a concurrent one.
type racingStore struct{ tools map[int64]store.Tool }

func (r *racingStore) CreateTool(_ context.Context, t *store.Tool) error {
	t.ID, t.Version = int64(len(r.tools)+1), 1
	r.tools[t.ID] = *t
	return nil
}

func (r *racingStore) GetTool(_ context.Context, accountID, id int64) (*store.Tool, error) {
	t, ok := r.tools[id]
	if !ok || t.AccountID != accountID {
		return nil, store.ErrNotFound
	}
	return &t, nil
}

func (r *racingStore) ListTools(context.Context, int64, store.Page) ([]store.Tool, string, error) {
	return nil, "", nil
}

func (r *racingStore) ToolsByCatalogName(context.Context, int64, string) ([]store.Tool, error) {
	return nil, nil
}

func (r *racingStore) UpdateToolConfig(context.Context, *store.Tool, string, int64) error {
	return store.ErrConflict
}

func (r *racingStore) DeleteOAuthStates(context.Context, int64) error { return nil }

func (r *racingStore) DeleteTool(context.Context, int64, int64) (*store.Tool, error) {
	return &store.Tool{}, nil
}

// TestProvideLosingARaceIsRetryable: a configuration step that loses to a
// concurrent change answers 409 request_in_progress with Retry-After, as
// API.md defines the code.
func TestProvideLosingARaceIsRetryable(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: &racingStore{tools: map[int64]store.Tool{}}, Catalog: cat, Box: box})
	ctx := context.Background()
	v, err := s.Create(ctx, 1, "http-request", "racy")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Provide(ctx, 1, v.ID, map[string]json.RawMessage{"base_url": json.RawMessage(`"https://example.com"`)})
	p, ok := problem.As(err)
	if !ok || p.Code != problem.RequestInProgress || p.HTTPStatus() != 409 || p.RetryAfter < 1 {
		t.Fatalf("error %v (%+v), want 409 request_in_progress with Retry-After", err, p)
	}
}
