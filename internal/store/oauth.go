package store

import (
	"context"
	"errors"
	"time"
)

// Errors of ConsumeOAuthState besides ErrNotFound.
var (
	// ErrStateUsed: the authorization state was already used once.
	ErrStateUsed = errors.New("store: oauth state already used")
	// ErrStateExpired: the authorization state is past its expiry.
	ErrStateExpired = errors.New("store: oauth state expired")
)

// OAuthState is a pending authorization: single use, expiring, bound to one
// tool of one account. The state is looked up by its hash; SealedState
// (the state itself, to show its authorization URL again) and Verifier
// (the PKCE code verifier) are sealed by the caller. ToolVersion and
// StepIndex are the tool's version and step the state was made for.
type OAuthState struct {
	StateHash   string `gorm:"primaryKey"`
	AccountID   int64
	ToolID      int64
	Verifier    string
	SealedState string
	ToolVersion int64
	StepIndex   int
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time
}

// TableName is the table of OAuthState.
func (OAuthState) TableName() string { return "oauth_states" }

// CreateOAuthState stores a new authorization state, and drops the tool's
// states that expired more than an hour ago (a state is made whenever the
// tool's oauth step is shown with no fresh one to show again, so they must
// not pile up).
func (s *Store) CreateOAuthState(ctx context.Context, st *OAuthState) error {
	db := s.db.WithContext(ctx)
	if err := db.Where("tool_id = ? AND expires_at < ?", st.ToolID, time.Now().UTC().Add(-time.Hour)).
		Delete(&OAuthState{}).Error; err != nil {
		return interpret(err)
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now()
	}
	// UTC throughout: SQLite compares these times as text.
	st.CreatedAt, st.ExpiresAt = st.CreatedAt.UTC(), st.ExpiresAt.UTC()
	return interpretWrite(db.Create(st).Error)
}

// FreshOAuthState returns the state to show again for the tool at its
// version and step: of its states made for them, unused and sealed, the one
// that expires last, if that is after notBefore. Else it answers
// ErrNotFound. One indexed read (oauth_states_tool_version_idx); the caller
// makes a new state only when this finds none.
//
// A state consumed by a callback (used_at set) is never returned, nor one
// of another version: a reset or reconfiguration bumps the tool's version.
func (s *Store) FreshOAuthState(ctx context.Context, accountID, toolID, toolVersion int64, stepIndex int, notBefore time.Time) (*OAuthState, error) {
	var st OAuthState
	err := s.db.WithContext(ctx).
		Where("tool_id = ? AND tool_version = ? AND step_index = ? AND account_id = ? AND used_at IS NULL AND sealed_state <> '' AND expires_at > ?",
			toolID, toolVersion, stepIndex, accountID, notBefore.UTC()).
		Order("expires_at DESC").Limit(1).Take(&st).Error
	if err != nil {
		return nil, interpret(err)
	}
	return &st, nil
}

// ConsumeOAuthState marks the state used and returns it. It answers
// ErrNotFound for a state it never issued (or whose tool is gone),
// ErrStateUsed for a replay and ErrStateExpired for a late one.
//
// The conditional UPDATE is the arbiter: of two concurrent callbacks with
// one state, exactly one sees a row affected.
func (s *Store) ConsumeOAuthState(ctx context.Context, stateHash string, now time.Time) (*OAuthState, error) {
	db := s.db.WithContext(ctx)
	now = now.UTC()
	res := db.Model(&OAuthState{}).
		Where("state_hash = ? AND used_at IS NULL AND expires_at > ?", stateHash, now).
		Update("used_at", now)
	if res.Error != nil {
		return nil, interpretWrite(res.Error)
	}
	var st OAuthState
	if err := db.Where("state_hash = ?", stateHash).Take(&st).Error; err != nil {
		return nil, interpret(err)
	}
	switch {
	case res.RowsAffected == 1:
		return &st, nil
	case st.UsedAt != nil:
		return &st, ErrStateUsed
	default:
		return &st, ErrStateExpired
	}
}

// DeleteOAuthStates drops every state of the tool: the links to authorize
// its configuration die with it when it is reset.
func (s *Store) DeleteOAuthStates(ctx context.Context, toolID int64) error {
	return interpretWrite(s.db.WithContext(ctx).Where("tool_id = ?", toolID).Delete(&OAuthState{}).Error)
}

// DeleteUnusedOAuthStates drops the tool's states that were not used: the
// other links to authorize it die once one of them connected it. Used ones
// stay, so a replay is still told it was used.
func (s *Store) DeleteUnusedOAuthStates(ctx context.Context, toolID int64) error {
	return interpretWrite(s.db.WithContext(ctx).Where("tool_id = ? AND used_at IS NULL", toolID).Delete(&OAuthState{}).Error)
}

// ExpireOAuthStates moves every state of the tool into the past; tests use
// it to prove late callbacks are refused.
func (s *Store) ExpireOAuthStates(ctx context.Context, toolID int64) error {
	return interpretWrite(s.db.WithContext(ctx).Model(&OAuthState{}).Where("tool_id = ?", toolID).
		Update("expires_at", time.Now().UTC().Add(-time.Minute)).Error)
}

// CountOAuthStates returns how many states of the tool are stored.
func (s *Store) CountOAuthStates(ctx context.Context, toolID int64) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&OAuthState{}).Where("tool_id = ?", toolID).Count(&n).Error
	return n, interpret(err)
}
