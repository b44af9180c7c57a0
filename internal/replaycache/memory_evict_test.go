package replaycache

import (
	"fmt"
	"testing"
	"time"
)

// TestMemoryFullPutStaysCheap: a put into a cache full of live outcomes (a
// replica that ran MaxEntries keyed calls within the key TTL) costs about
// what one into a cache with room does. Before, choosing the outcome to
// drop scanned the whole map under the lock every call takes: about 800
// times the cost, half a millisecond per keyed call on a slow machine.
func TestMemoryFullPutStaysCheap(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := make([]byte, 300)
	fill := func(n int) *Memory {
		m := NewMemory()
		m.now = func() time.Time { return now }
		for i := range n {
			m.Put(1, fmt.Sprint("k", i), &Entry{Fingerprint: fp(1), Body: body}, now.Add(time.Duration(i+1)*time.Second))
		}
		return m
	}
	const puts = 2000
	perPut := func(m *Memory) time.Duration {
		best := time.Duration(1 << 62)
		for round := range 3 {
			start := time.Now()
			for i := range puts {
				m.Put(1, fmt.Sprint("n", round, i), &Entry{Fingerprint: fp(1), Body: body}, now.Add(48*time.Hour))
			}
			best = min(best, time.Since(start)/puts)
		}
		return best
	}
	roomy, full := fill(1000), fill(MaxEntries)
	withRoom, atBound := perPut(roomy), perPut(full)
	if len(full.outcomes) > MaxEntries {
		t.Fatalf("the full cache holds %d outcomes, over %d", len(full.outcomes), MaxEntries)
	}
	t.Logf("per put: %v with room, %v at the bound", withRoom, atBound)
	if atBound > 30*withRoom+5*time.Microsecond {
		t.Fatalf("a put at the bound costs %v, one with room %v", atBound, withRoom)
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
