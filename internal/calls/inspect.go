package calls

import (
	"context"
	"errors"
	"time"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// KeyState is an idempotency key as GET /api/v1/idempotency-keys/{key}
// shows it.
type KeyState struct {
	Key       string    `json:"key"`
	State     string    `json:"state"`
	Tool      int64     `json:"tool"`
	Action    string    `json:"action"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	CallID    string    `json:"call_id"`
}

// ValidKey reports whether k is an Idempotency-Key API.md allows: 1 to 255
// printable ASCII characters, without a leading or trailing space.
func ValidKey(k string) bool {
	if len(k) < 1 || len(k) > 255 || k[0] == ' ' || k[len(k)-1] == ' ' {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Key returns the state of one of the account's keys. A key no call could
// have used names nothing: it is not looked up.
func (e *Engine) Key(ctx context.Context, accountID int64, key string) (*KeyState, error) {
	if !ValidKey(key) {
		return nil, problem.New(problem.NotFound, "No idempotency key with that value for this account.")
	}
	r, err := e.opts.Store.GetIdem(ctx, accountID, key)
	// Past its TTL a key is new again, as a call takes it (Reserve), unless
	// its call still holds a live lease.
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.ExpiresAt <= r.NowMS && !(r.State == store.IdemDispatched && !r.LeaseExpired())) {
		return nil, problem.New(problem.NotFound, "No idempotency key with that value for this account.")
	}
	if err != nil {
		return nil, err // a read: the API says the database is unavailable
	}
	state := "in_progress"
	switch {
	case r.State == store.IdemSucceeded:
		state = "succeeded"
	case r.State == store.IdemOutcomeUnknown || r.LeaseExpired():
		state = "outcome_unknown"
	}
	return &KeyState{Key: r.Key, State: state, Tool: r.ToolID, Action: r.Action, CallID: r.CallID,
		CreatedAt: time.UnixMilli(r.CreatedAt).UTC().Truncate(time.Second), ExpiresAt: time.UnixMilli(r.ExpiresAt).UTC().Truncate(time.Second)}, nil
}

// Calls returns one page of the account's call log, in the order its
// entries were written, with every call this replica has answered (another
// replica's calls without a key reach the log within logInterval).
func (e *Engine) Calls(ctx context.Context, accountID int64, toolID *int64, p store.Page) ([]store.CallLog, string, error) {
	if err := e.log.sync(ctx); err != nil {
		return nil, "", err
	}
	cs, next, err := e.opts.Store.ListCalls(ctx, accountID, toolID, p)
	if err != nil {
		return nil, "", err
	}
	for i := range cs {
		cs[i].CreatedAt = cs[i].CreatedAt.UTC().Truncate(time.Second)
	}
	return cs, next, nil
}
