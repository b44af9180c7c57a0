package toolconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// overtakenStore is racingStore whose first configuration update loses to
// a concurrent one that wrote the same change (a double-clicked submit):
// the row then holds what the winner stored, at a newer version. Later
// updates are conditional on the version, as the real store's are.
type overtakenStore struct {
	racingStore
	lost int
}

func (o *overtakenStore) UpdateToolConfig(_ context.Context, t *store.Tool, wantState string, wantVersion int64) error {
	cur := o.tools[t.ID]
	if o.lost == 0 {
		o.lost++
		won := *t
		won.Version = cur.Version + 1
		o.tools[t.ID] = won
		return store.ErrConflict
	}
	if cur.State != wantState || cur.Version != wantVersion {
		return store.ErrConflict
	}
	t.Version = wantVersion + 1
	o.tools[t.ID] = *t
	return nil
}

func overtakenService(t *testing.T) (*Service, *overtakenStore) {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	st := &overtakenStore{racingStore: racingStore{tools: map[int64]store.Tool{}}}
	return New(Options{Store: st, Catalog: cat, Box: box}), st
}

// TestProvideOvertakenAnswersAsAfterTheWinner: two provide-config calls on
// one tool at once; the one whose conditional update loses is answered as
// if it had come after the winner (which is what happened), from the
// tool as it now is: here the step it answered is already answered, a 422
// naming the field, as a second submit in a row gets. Before, it was 409
// request_in_progress, a code API.md gives to a request whose
// Idempotency-Key is still running: nothing was in progress by then, and a
// client retrying on it met the 422 anyway.
func TestProvideOvertakenAnswersAsAfterTheWinner(t *testing.T) {
	s, st := overtakenService(t)
	ctx := context.Background()
	v, err := s.Create(ctx, 1, "http-request", "racy")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Provide(ctx, 1, v.ID, map[string]json.RawMessage{"base_url": json.RawMessage(`"https://example.com"`)})
	p, ok := problem.As(err)
	if !ok || p.Code != problem.ValidationError || !strings.Contains(p.Fields["base_url"], "already answered") {
		t.Fatalf("overtaken provide-config: %v (%+v), want 422 naming base_url as already answered", err, p)
	}
	if got := st.tools[v.ID]; got.StepIndex != 1 {
		t.Fatalf("tool at step index %d, want the winner's 1", got.StepIndex)
	}
}

// TestResetOvertakenIsDone: a reset-config whose update loses to another
// change is done again on the tool as it now is: a reset has one outcome
// whatever came first.
func TestResetOvertakenIsDone(t *testing.T) {
	s, st := overtakenService(t)
	ctx := context.Background()
	v, err := s.Create(ctx, 1, "http-request", "racy")
	if err != nil {
		t.Fatal(err)
	}
	st.lost = 1 // the provide goes through
	if _, err := s.Provide(ctx, 1, v.ID, map[string]json.RawMessage{"base_url": json.RawMessage(`"https://example.com"`)}); err != nil {
		t.Fatal(err)
	}
	st.lost = 0 // the reset loses once
	got, err := s.Reset(ctx, 1, v.ID)
	if err != nil || got.NextConfigurationStep == nil || got.NextConfigurationStep.Index != 1 {
		t.Fatalf("overtaken reset: %+v, %v; want the tool at its first step", got, err)
	}
}
