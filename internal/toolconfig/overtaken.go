package toolconfig

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// A configuration change is a conditional update on the tool's version. One
// that loses to another change made at the same time (two provide-config
// calls on one tool, a reset beside an OAuth callback) has not been applied
// at all, so it is run again, from the start, on the tool as the winner
// left it: the caller is answered as if its request had come second, which
// it did. A second submit of one step's answers is then told the step is
// already answered, and a reset resets. Only a tool that keeps changing
// under every attempt gets 409 request_in_progress: another request on it
// is still under way, and Retry-After says when to look again.

// maxAttempts bounds the attempts of one change that keeps being overtaken.
const maxAttempts = 3

// errOvertaken is an attempt's update that lost to another change.
var errOvertaken = errors.New("toolconfig: the tool was changed by another request")

// Provide validates the user's answers to the tool's current step, stores
// them and advances, or refuses them and leaves the tool where it was.
func (s *Service) Provide(ctx context.Context, accountID, id int64, answers map[string]json.RawMessage) (*View, error) {
	return retryOvertaken(func() (*View, error) { return s.provide(ctx, accountID, id, answers) })
}

// Reset puts the tool back at its first step and forgets its configuration;
// its OAuth tokens are then revoked at the provider, as Delete's are.
func (s *Service) Reset(ctx context.Context, accountID, id int64) (*View, error) {
	return retryOvertaken(func() (*View, error) { return s.reset(ctx, accountID, id) })
}

func retryOvertaken(attempt func() (*View, error)) (*View, error) {
	for range maxAttempts {
		v, err := attempt()
		if !errors.Is(err, errOvertaken) {
			return v, err
		}
	}
	// API.md: request_in_progress always carries Retry-After.
	p := problem.New(problem.RequestInProgress, "Other requests kept changing this tool while this one was being saved; read it again and retry.")
	p.RetryAfter = 1
	return nil, p
}

// update stores t if it is still at state from and version; errOvertaken
// if another change landed first, not_found if the tool was deleted.
func (s *Service) update(ctx context.Context, t *store.Tool, from string, version int64) error {
	err := s.opts.Store.UpdateToolConfig(ctx, t, from, version)
	s.invalidate(t.AccountID, t.ID)
	if errors.Is(err, store.ErrConflict) {
		// A tool deleted while its answer was checked (a verify may take
		// seconds) is gone, not changed: a retry would only find a 404.
		if _, gerr := s.opts.Store.GetTool(ctx, t.AccountID, t.ID); errors.Is(gerr, store.ErrNotFound) {
			return notFound(t.ID)
		}
		return errOvertaken
	}
	return err
}
