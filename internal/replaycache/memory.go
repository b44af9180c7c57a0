package replaycache

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Memory is the in-process cache of the embedded default: the same rules on
// one process. It holds at most MaxEntries outcomes; the database keeps the
// rest.
type Memory struct {
	mu       sync.Mutex
	outcomes map[memKey]memOutcome
	locks    map[memKey]memLock
	now      func() time.Time
}

// MaxEntries bounds the outcomes Memory keeps.
const MaxEntries = 50_000

type memKey struct {
	account int64
	key     string
}

type memOutcome struct {
	e       *Entry
	expires time.Time
}

type memLock struct {
	value   string
	expires time.Time
}

// NewMemory returns an empty in-process cache.
func NewMemory() *Memory {
	return &Memory{outcomes: map[memKey]memOutcome{}, locks: map[memKey]memLock{}, now: time.Now}
}

// Begin implements Cache.
func (m *Memory) Begin(_ context.Context, account int64, key string, fingerprint []byte, token string, lease time.Duration) (BeginResult, error) {
	k := memKey{account, key}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.outcomes[k]; ok {
		if now.Before(o.expires) {
			return BeginResult{Entry: o.e}, nil
		}
		delete(m.outcomes, k)
	}
	if l, ok := m.locks[k]; ok && now.Before(l.expires) {
		return BeginResult{HolderFingerprint: []byte(l.value[:32])}, nil
	}
	m.locks[k] = memLock{value: lockValue(fingerprint, token), expires: now.Add(lease)}
	return BeginResult{Locked: true}, nil
}

// Finish implements Cache.
func (m *Memory) Finish(_ context.Context, account int64, key string, e *Entry, ttl time.Duration) error {
	k := memKey{account, key}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.locks, k)
	if len(e.Body) > MaxBody || ttl <= 0 {
		return nil
	}
	if len(m.outcomes) >= MaxEntries {
		for k, o := range m.outcomes { // drop expired ones, else any one
			if now.After(o.expires) || len(m.outcomes) >= MaxEntries {
				delete(m.outcomes, k)
			}
			if len(m.outcomes) < MaxEntries*9/10 {
				break
			}
		}
	}
	cp := *e
	cp.Body = bytes.Clone(e.Body)
	cp.Fingerprint = bytes.Clone(e.Fingerprint)
	m.outcomes[k] = memOutcome{e: &cp, expires: now.Add(ttl)}
	return nil
}

// Unlock implements Cache.
func (m *Memory) Unlock(_ context.Context, account int64, key, token string) error {
	k := memKey{account, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.locks[k]; ok && l.value[32:] == token {
		delete(m.locks, k)
	}
	return nil
}

// Ping implements Cache.
func (m *Memory) Ping(context.Context) error { return nil }
