package replaycache

import (
	"context"
	"time"
)

// Tiered puts this process's memory in front of a shared cache (Redis).
// Outcomes are terminal and immutable until their key expires, so a copy
// kept in process is never stale: a replay on the replica that ran the call
// (or replayed it once) costs no round trip at all. Locks live only in the
// shared tier, where every replica sees them.
type Tiered struct {
	near *Memory
	far  Cache
}

// NewTiered returns a cache with near in front of far.
func NewTiered(near *Memory, far Cache) *Tiered { return &Tiered{near: near, far: far} }

// Begin implements Cache.
func (t *Tiered) Begin(ctx context.Context, account int64, key string, fingerprint []byte, token string, lease time.Duration) (BeginResult, error) {
	if e := t.near.Get(account, key); e != nil {
		return BeginResult{Entry: e}, nil
	}
	res, err := t.far.Begin(ctx, account, key, fingerprint, token, lease)
	if err == nil && res.Entry != nil {
		if expires, ok := nearExpiry(res, t.near.now()); ok {
			t.near.Put(account, key, res.Entry, expires)
		}
	}
	return res, err
}

// nearExpiry is when a near copy of the outcome res read from the far tier
// ends: when the far tier drops it, as its TTL says on this replica's
// clock, and no later than the entry's ExpiresAt. ExpiresAt alone is on
// the clock of the replica that wrote the entry: one that runs ahead would
// keep the copy past the key's TTL, and this replica would replay an
// outcome for a key that is new again. Neither known: no copy.
func nearExpiry(res BeginResult, now time.Time) (time.Time, bool) {
	var expires time.Time
	if res.TTL > 0 {
		expires = now.Add(res.TTL)
	}
	if res.Entry.ExpiresAt > 0 {
		if at := time.UnixMilli(res.Entry.ExpiresAt); expires.IsZero() || at.Before(expires) {
			expires = at
		}
	}
	return expires, !expires.IsZero()
}

// Finish implements Cache. The near copy is kept even if the far tier
// fails: it holds a terminal outcome, which the database holds too or is
// recording at the same moment (calls.dispatch).
func (t *Tiered) Finish(ctx context.Context, account int64, key string, e *Entry, ttl time.Duration) error {
	if e.ExpiresAt == 0 {
		e.ExpiresAt = time.Now().Add(ttl).UnixMilli()
	}
	t.near.Put(account, key, e, time.UnixMilli(e.ExpiresAt))
	return t.far.Finish(ctx, account, key, e, ttl)
}

// Unlock implements Cache.
func (t *Tiered) Unlock(ctx context.Context, account int64, key, token string) error {
	return t.far.Unlock(ctx, account, key, token)
}

// Ping implements Cache.
func (t *Tiered) Ping(ctx context.Context) error { return t.far.Ping(ctx) }
