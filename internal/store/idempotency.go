package store

// The idempotency statements are written out here, one per transition, so
// their concurrency argument can be read in one place:
//
//   - (account_id, key) is the primary key: of any number of racing
//     Reserve calls, across any number of replicas, exactly one INSERT
//     creates the row; the others see it and answer from it.
//   - Every later transition (Complete, MarkUnknown, Release) is a
//     conditional statement on state = 'dispatched' AND lease_token = the
//     token its Reserve created, so a replica that lost its lease (the
//     sweeper declared the outcome unknown) cannot overwrite that decision.
//   - Lease and expiry times are read from the database clock (s.nowMS) in
//     the same statement that compares them, never from a replica's clock.

import (
	"context"
	"time"
)

// Idempotency key states as stored.
const (
	IdemDispatched     = "dispatched"
	IdemSucceeded      = "succeeded"
	IdemOutcomeUnknown = "outcome_unknown"
)

// IdemRecord is a row of idempotency_keys. Times are milliseconds since the
// epoch on the database clock. NowMS is the database clock when the row was
// read, so callers judge the lease without their own clock.
type IdemRecord struct {
	AccountID      int64
	Key            string
	Fingerprint    []byte
	State          string
	LeaseToken     *string
	LeaseExpiresAt *int64
	ToolID         int64
	Action         string
	CallID         string
	StatusCode     *int
	ContentType    *string
	Response       []byte
	CreatedAt      int64
	ExpiresAt      int64
	NowMS          int64 `gorm:"column:now_ms"`
}

// LeaseExpired reports whether a dispatched row's lease had run out when it
// was read.
func (r *IdemRecord) LeaseExpired() bool {
	return r.State == IdemDispatched && r.LeaseExpiresAt != nil && *r.LeaseExpiresAt <= r.NowMS
}

const idemColumns = `account_id, key, fingerprint, state, lease_token, lease_expires_at, tool_id, action,
	call_id, status_code, content_type, response, created_at, expires_at`

// Reserve inserts r in state dispatched with a lease, unless the key exists.
// It returns (nil, nil) when this call created the row, and the existing
// row otherwise. A row past its TTL is deleted and the insert tried again.
func (s *Store) Reserve(ctx context.Context, r *IdemRecord, lease, ttl time.Duration) (*IdemRecord, error) {
	db := s.db.WithContext(ctx)
	for attempt := 0; ; attempt++ {
		// ON CONFLICT DO NOTHING RETURNING returns a row only when this
		// statement inserted it: one round trip tells "new" from "taken".
		var created []int64
		err := db.Raw(`INSERT INTO idempotency_keys
			(account_id, key, fingerprint, state, lease_token, lease_expires_at, tool_id, action, call_id, created_at, expires_at)
			VALUES (?, ?, ?, 'dispatched', ?, `+s.nowMS+` + ?, ?, ?, ?, `+s.nowMS+`, `+s.nowMS+` + ?)
			ON CONFLICT (account_id, key) DO NOTHING
			RETURNING created_at`,
			r.AccountID, r.Key, r.Fingerprint, r.LeaseToken, lease.Milliseconds(), r.ToolID, r.Action, r.CallID, ttl.Milliseconds(),
		).Scan(&created).Error
		if err != nil {
			return nil, interpret(err)
		}
		if len(created) == 1 {
			r.State, r.CreatedAt = IdemDispatched, created[0]
			return nil, nil
		}
		existing, err := s.GetIdem(ctx, r.AccountID, r.Key)
		if err == ErrNotFound && attempt < 3 {
			continue // released between our insert and our read
		}
		if err != nil {
			return nil, err
		}
		if existing.ExpiresAt > existing.NowMS || attempt > 0 {
			return existing, nil
		}
		// The key outlived its TTL: it is new again. A dispatched row with a
		// live lease is never expired here, whatever the TTL says.
		if err := db.Exec(`DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND expires_at <= `+s.nowMS+`
			AND (state <> 'dispatched' OR lease_expires_at <= `+s.nowMS+`)`, r.AccountID, r.Key).Error; err != nil {
			return nil, interpret(err)
		}
	}
}

// GetIdem reads one key with the database clock.
func (s *Store) GetIdem(ctx context.Context, accountID int64, key string) (*IdemRecord, error) {
	var rs []IdemRecord
	err := s.db.WithContext(ctx).Raw(`SELECT `+idemColumns+`, `+s.nowMS+` AS now_ms
		FROM idempotency_keys WHERE account_id = ? AND key = ?`, accountID, key).Scan(&rs).Error
	if err != nil {
		return nil, interpret(err)
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return &rs[0], nil
}

// Complete stores a known outcome: the exact response bytes. It returns
// false when the lease was lost (the row is no longer ours to decide).
func (s *Store) Complete(ctx context.Context, accountID int64, key, leaseToken string, status int, contentType string, body []byte) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys
		SET state = 'succeeded', status_code = ?, content_type = ?, response = ?, lease_token = NULL, lease_expires_at = NULL
		WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ?`,
		status, contentType, body, accountID, key, leaseToken)
	return res.RowsAffected == 1, interpret(res.Error)
}

// MarkUnknown records that a dispatched call has no known outcome. The key
// is terminal from then on.
func (s *Store) MarkUnknown(ctx context.Context, accountID int64, key, leaseToken string) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys
		SET state = 'outcome_unknown', lease_token = NULL, lease_expires_at = NULL
		WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ?`,
		accountID, key, leaseToken)
	return res.RowsAffected == 1, interpret(res.Error)
}

// Release deletes a reservation whose call provably never reached the tool,
// so the key can be used again.
func (s *Store) Release(ctx context.Context, accountID int64, key, leaseToken string) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys
		WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ?`,
		accountID, key, leaseToken)
	return res.RowsAffected == 1, interpret(res.Error)
}

// SweptKey is a key the sweeper declared outcome_unknown.
type SweptKey struct {
	AccountID int64
	Key       string
	ToolID    int64
	Action    string
	CallID    string
	CreatedAt int64
}

// SweepExpiredLeases turns every dispatched row whose lease ran out into
// outcome_unknown and returns them. Safe to run concurrently in every
// replica: the WHERE clause re-checks each row under its row lock, so a row
// is swept once and a completion that won the race is never overwritten.
func (s *Store) SweepExpiredLeases(ctx context.Context) ([]SweptKey, error) {
	var out []SweptKey
	err := s.db.WithContext(ctx).Raw(`UPDATE idempotency_keys
		SET state = 'outcome_unknown', lease_token = NULL, lease_expires_at = NULL
		WHERE state = 'dispatched' AND lease_expires_at <= ` + s.nowMS + `
		RETURNING account_id, key, tool_id, action, call_id, created_at`).Scan(&out).Error
	return out, interpret(err)
}

// PurgeExpiredKeys deletes keys past their TTL (never one still leased) and
// returns how many.
func (s *Store) PurgeExpiredKeys(ctx context.Context) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys WHERE expires_at <= ` + s.nowMS + `
		AND (state <> 'dispatched' OR lease_expires_at <= ` + s.nowMS + `)`)
	return res.RowsAffected, interpret(res.Error)
}
