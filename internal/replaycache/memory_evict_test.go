package replaycache

import (
	"fmt"
	"testing"
	"time"
)

// TestMemoryFullPutLooksAtASample: a put into a cache full of live
// outcomes (a replica that ran MaxEntries keyed calls within the key TTL)
// looks at evictSample of them to choose the one it drops, not at the whole
// map under the lock every call takes (which cost ~450 µs a put against
// ~1 µs with room: BenchmarkMemoryPutFull), and the cache stays within its
// bound, dropping the soonest to expire of those it looked at.
func TestMemoryFullPutLooksAtASample(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := NewMemory()
	m.now = func() time.Time { return now }
	for i := range MaxEntries {
		m.Put(1, fmt.Sprint("k", i), &Entry{Fingerprint: fp(1)}, now.Add(time.Duration(i+1)*time.Second))
	}
	if m.examined != 0 {
		t.Fatalf("puts with room examined %d outcomes", m.examined)
	}
	const puts = 100
	for i := range puts {
		m.Put(1, fmt.Sprint("n", i), &Entry{Fingerprint: fp(1)}, now.Add(48*time.Hour))
	}
	if len(m.outcomes) != MaxEntries {
		t.Fatalf("the full cache holds %d outcomes, want %d", len(m.outcomes), MaxEntries)
	}
	if m.examined != puts*evictSample {
		t.Fatalf("%d puts at the bound examined %d outcomes, want %d each", puts, m.examined, evictSample)
	}
	for i := range puts {
		if m.Get(1, fmt.Sprint("n", i)) == nil {
			t.Fatalf("the put outcome n%d was dropped: the newest to expire must not be the one chosen", i)
		}
	}
}

// BenchmarkMemoryPutFull is a put into a cache full of live outcomes, and
// one into a cache with room.
//
//	go test -run '^$' -bench MemoryPut ./internal/replaycache
func BenchmarkMemoryPutFull(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	body := make([]byte, 300)
	for name, n := range map[string]int{"room": 1000, "full": MaxEntries} {
		b.Run(name, func(b *testing.B) {
			m := NewMemory()
			m.now = func() time.Time { return now }
			for i := range n {
				m.Put(1, fmt.Sprint("k", i), &Entry{Fingerprint: fp(1), Body: body}, now.Add(time.Duration(i+1)*time.Second))
			}
			i := 0
			for b.Loop() {
				m.Put(1, fmt.Sprint("n", i), &Entry{Fingerprint: fp(1), Body: body}, now.Add(48*time.Hour))
				i++
				if n < MaxEntries && i%500 == 0 {
					b.StopTimer()
					m.mu.Lock()
					for j := i - 500; j < i; j++ {
						m.dropLocked(memKey{1, fmt.Sprint("n", j)})
					}
					m.mu.Unlock()
					b.StartTimer()
				}
			}
		})
	}
}

// TestMemoryFullDropsAnExpiredOutcomeFirst: over the bound, an expired
// outcome the put comes across goes before a live one.
func TestMemoryFullDropsAnExpiredOutcomeFirst(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := NewMemory()
	m.now = func() time.Time { return now }
	for i := range MaxEntries {
		// Every other outcome has expired: any sample holds one.
		exp := now.Add(time.Hour)
		if i%2 == 0 {
			exp = now.Add(time.Second)
		}
		m.Put(1, fmt.Sprint("k", i), &Entry{Fingerprint: fp(1)}, exp)
	}
	now = now.Add(time.Minute)
	for i := range 100 {
		m.Put(1, fmt.Sprint("n", i), &Entry{Fingerprint: fp(1)}, now.Add(time.Hour))
	}
	live := 0
	for _, o := range m.outcomes {
		if now.Before(o.expires) {
			live++
		}
	}
	if want := MaxEntries/2 + 100; live != want {
		t.Fatalf("%d live outcomes kept, want %d: a live one was dropped while expired ones were left", live, want)
	}
}
