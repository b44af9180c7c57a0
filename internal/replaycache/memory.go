package replaycache

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Memory is the in-process cache: the whole cache of the embedded default
// (the same rules on one process), and the near tier in front of Redis. It
// keeps at most MaxEntries outcomes and MaxBytes of bodies; the database
// keeps everything, so an evicted outcome only costs a slower replay.
type Memory struct {
	mu       sync.Mutex
	outcomes map[memKey]memOutcome
	locks    map[memKey]memLock
	bytes    int
	now      func() time.Time
	// examined counts the outcomes puts over a bound looked at to choose
	// one to drop (a test reads it).
	examined int
}

// Bounds of Memory.
const (
	MaxEntries = 50_000
	MaxBytes   = 64 << 20
)

// evictSample is how many outcomes a put over a bound looks at to choose
// the one it drops.
const evictSample = 16

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
	if e := m.getLocked(k, now); e != nil {
		return BeginResult{Entry: e}, nil
	}
	if l, ok := m.locks[k]; ok && now.Before(l.expires) {
		return BeginResult{}, nil
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
	if ttl > 0 {
		m.putLocked(k, e, now.Add(ttl), now)
	}
	return nil
}

// Get returns the outcome of (account, key) if this process holds it.
func (m *Memory) Get(account int64, key string) *Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.getLocked(memKey{account, key}, m.now())
}

// Put keeps an outcome until expires.
func (m *Memory) Put(account int64, key string, e *Entry, expires time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(memKey{account, key}, e, expires, m.now())
}

func (m *Memory) getLocked(k memKey, now time.Time) *Entry {
	o, ok := m.outcomes[k]
	if !ok {
		return nil
	}
	if now.Before(o.expires) {
		return o.e
	}
	m.dropLocked(k)
	return nil
}

func (m *Memory) dropLocked(k memKey) {
	if o, ok := m.outcomes[k]; ok {
		m.bytes -= len(o.e.Body)
		delete(m.outcomes, k)
	}
}

func (m *Memory) putLocked(k memKey, e *Entry, expires, now time.Time) {
	if len(e.Body) > MaxBody || !now.Before(expires) {
		return
	}
	m.dropLocked(k)
	// Over a bound, drop an outcome among the first evictSample the map
	// hands out (its order is random enough for a cache whose misses only
	// cost a database read): an expired one if there is one, else the one
	// that expires first. Looking further would scan the whole map, under
	// the lock every call takes, on every put once the cache is full of
	// live outcomes, as it is on a replica that ran MaxEntries keyed calls
	// within the key TTL.
	for len(m.outcomes) >= MaxEntries || m.bytes+len(e.Body) > MaxBytes {
		victim, found, seen := memKey{}, false, 0
		var soonest time.Time
		for vk, o := range m.outcomes {
			if !found || o.expires.Before(soonest) {
				victim, found, soonest = vk, true, o.expires
			}
			m.examined++
			if seen++; !now.Before(o.expires) || seen == evictSample {
				break
			}
		}
		if !found {
			break
		}
		m.dropLocked(victim)
	}
	cp := *e
	cp.Body = bytes.Clone(e.Body)
	cp.Fingerprint = bytes.Clone(e.Fingerprint)
	if e.ReadOnly != nil {
		cp.ReadOnly = Flag(*e.ReadOnly)
	}
	m.outcomes[k] = memOutcome{e: &cp, expires: expires}
	m.bytes += len(cp.Body)
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
