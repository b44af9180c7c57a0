package store

// A tool's refresh lease: how LockTool serializes token refreshes across
// replicas without holding a connection while the provider answers.
//
//	read the tool and its lease ──▶ another's, live? wait (backoff) and read again
//	  │ free, or expired
//	  ▼
//	claim: UPDATE … SET refresh_lease = owner
//	       WHERE version = read AND (lease free OR expired)   (0 rows: read again)
//	  ▼
//	fn(tool, save), no connection held: the provider's round trip
//	  ▼
//	save: UPDATE … WHERE version = read AND refresh_lease = owner, freeing it
//	  or, not saved: UPDATE … SET refresh_lease = '' WHERE refresh_lease = owner
//
// Why it holds under concurrency:
//
//   - One owner at a time: the claim is one conditional UPDATE, and of two
//     replicas claiming one row exactly one sees a row affected.
//   - A refresh token is never spent twice: a lease lasts as long as its
//     owner can run (the caller's deadline, plus leaseGrace for the save), so
//     no one takes it over while the owner may still be at the provider. A
//     waiter reads what the owner saved once the lease is freed.
//   - Every write is conditional on the version the owner read, as before: a
//     configuration change, reset or delete meanwhile (none of which waits
//     for the lease) makes the save ErrConflict. The claim changes no
//     version, so it fails no other writer.
//   - The save is conditional on the lease too: an owner that outlived its
//     lease, and was taken over, cannot overwrite its successor's tokens.
//   - Expiry is judged by the database clock alone (nowMS), so replicas'
//     clocks never disagree about it.
//
// A crashed owner leaves its lease until it expires; the waiters until then
// wait, bounded by their own deadline.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// SaveToolFunc writes a tool's configuration fields and token, bumping its
// version, under the lock LockTool holds.
type SaveToolFunc func(t *Tool) error

// Timings of the refresh lease.
const (
	// leaseGrace is how long a lease outlasts its caller's deadline: the
	// claim's own round trip and a save (saveTimeout) after it.
	leaseGrace = 15 * time.Second
	// defaultLease is the lease of a caller whose context has no deadline.
	defaultLease = time.Minute
	// saveTimeout bounds a save, detached from the caller's context: a
	// rotated refresh token the provider issued must be stored, even when
	// the caller's deadline is near.
	saveTimeout = 10 * time.Second
	// releaseTimeout bounds freeing a lease nothing was saved under.
	releaseTimeout = 5 * time.Second
	// leasePollMin and leasePollMax bound the pauses of a caller waiting
	// for another's lease: doubling from the first to the second.
	leasePollMin = 10 * time.Millisecond
	leasePollMax = 250 * time.Millisecond
)

// LockTool runs fn with the account's tool as stored now, holding the
// tool's refresh lease: a lock that serializes token refreshes across
// replicas (and processes), without a connection held while fn runs, so a
// refresh waiting on its provider keeps none of the pool.
//
// A caller that finds another's live lease waits until it is freed (its
// owner saved, or gave up) or expires, polling with backoff, and then reads
// the tool again: a second replica refreshing the same tool reads what the
// first one wrote, so a refresh token is never spent twice. The wait is
// bounded by ctx; the lease itself lasts until ctx's deadline and
// leaseGrace (a minute with no deadline), and fn must be done by then.
//
// save is conditional on the version fn was given and on the lease: it
// returns ErrConflict if the row changed (a configuration change, reset or
// delete does not wait for the lease) or the lease was taken over. It frees
// the lease; if fn saves nothing, LockTool frees it when fn returns.
func (s *Store) LockTool(ctx context.Context, accountID, id int64, fn func(t *Tool, save SaveToolFunc) error) error {
	owner, err := leaseOwner()
	if err != nil {
		return err
	}
	t, err := s.claimTool(ctx, accountID, id, owner)
	if err != nil {
		return err
	}
	state, version, saved := t.State, t.Version, false
	err = fn(t, func(nt *Tool) error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
		defer cancel()
		err := updateTool(s.db.WithContext(sctx), nt, state, version, owner)
		// Interrupted, it may have been applied, lease freed with it; if
		// not, releasing it below is harmless.
		saved = err == nil
		return err
	})
	if !saved {
		s.releaseLease(ctx, accountID, id, owner)
	}
	return err
}

// leasedTool is a tool as read with its refresh lease: LeftMS is how long
// the lease runs yet, by the database clock, or ≤ 0 when it is free or
// expired.
type leasedTool struct {
	Tool
	LeftMS int64 `gorm:"column:lease_left_ms"`
}

// claimTool waits for the tool's refresh lease to be free or expired,
// takes it for owner, and returns the tool as it was when taken.
func (s *Store) claimTool(ctx context.Context, accountID, id int64, owner string) (*Tool, error) {
	read := `SELECT *, CASE WHEN refresh_lease = '' THEN 0 ELSE refresh_lease_until - ` + s.nowMS + ` END AS lease_left_ms
		FROM tools WHERE id = ? AND account_id = ?`
	// The claim names the version read, so the tool fn is given is the one
	// leased: a change between the read and the claim fails it (0 rows),
	// and the row is read again.
	claim := `UPDATE tools SET refresh_lease = ?, refresh_lease_until = ` + s.nowMS + ` + ?
		WHERE id = ? AND account_id = ? AND version = ? AND (refresh_lease = '' OR refresh_lease_until <= ` + s.nowMS + `)`
	for pause := leasePollMin; ; {
		var lt leasedTool
		var n int64
		err := s.again(ctx, func() error {
			res := s.db.WithContext(ctx).Raw(read, id, accountID).Scan(&lt)
			n = res.RowsAffected
			return res.Error
		})
		if err != nil {
			return nil, interpret(err)
		}
		if n == 0 {
			return nil, ErrNotFound
		}
		if lt.LeftMS <= 0 {
			res := s.db.WithContext(ctx).Exec(claim, owner, leaseFor(ctx).Milliseconds(), id, accountID, lt.Version)
			if res.Error != nil {
				// It may have been taken (a lost answer): let it go.
				s.releaseLease(ctx, accountID, id, owner)
				return nil, interpretWrite(res.Error)
			}
			if res.RowsAffected == 1 {
				t := lt.Tool
				return &t, nil
			}
			continue // changed or claimed since read: read it again
		}
		wait := min(pause, time.Duration(lt.LeftMS)*time.Millisecond)
		pause = min(2*pause, leasePollMax)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, interpret(ctx.Err())
		case <-timer.C:
		}
	}
}

// leaseFor is how long a lease taken now for a caller with ctx lasts.
func leaseFor(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 0) + leaseGrace
	}
	return defaultLease
}

// releaseLease frees the tool's refresh lease if owner still holds it. A
// failure is only logged: the lease expires.
func (s *Store) releaseLease(ctx context.Context, accountID, id int64, owner string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := s.db.WithContext(ctx).Exec(`UPDATE tools SET refresh_lease = '', refresh_lease_until = 0
		WHERE id = ? AND account_id = ? AND refresh_lease = ?`, id, accountID, owner).Error
	if err != nil {
		s.log.WarnContext(ctx, "store: freeing a tool's refresh lease failed; it expires", "tool", id, "error", interpretWrite(err))
	}
}

// leaseOwner returns a new lease owner's token.
func leaseOwner() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
