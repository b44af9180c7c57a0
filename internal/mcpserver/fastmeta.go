package mcpserver

import (
	"sync"
	"sync/atomic"
)

// A client on protocol 2026-07-28 sends its _meta (protocol version,
// clientInfo, clientCapabilities) with every request, the same bytes each
// time. Checking that the SDK reads it as parseCall does takes four JSON
// decodes, about ten times the rest of parseCall and sixty allocations, so
// the _meta values found good are remembered by their text: the check
// depends on nothing else (the header's version is checked apart, and
// metas holds only those accepted under protocolStateless).

// Bounds of the remembered _meta values: a client whose _meta differs on
// every request (a progress token, a trace ID) fills the set once and is
// then checked each time, as before, at the cost of one map lookup.
const (
	maxMetas   = 64
	maxMetaLen = 1024
)

// metaSet is the set of _meta texts accepted under protocolStateless. It
// is read without a lock: a copy with one more member replaces it.
type metaSet struct {
	mu  sync.Mutex
	set atomic.Pointer[map[string]struct{}]
}

// has reports whether raw was accepted before.
func (m *metaSet) has(raw []byte) bool {
	set := m.set.Load()
	if set == nil {
		return false
	}
	_, ok := (*set)[string(raw)]
	return ok
}

// add remembers raw, found good, while there is room. A full set is told
// without the lock, so that once full it costs a call nothing more.
func (m *metaSet) add(raw []byte) {
	if len(raw) > maxMetaLen {
		return
	}
	if set := m.set.Load(); set != nil && len(*set) >= maxMetas {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.set.Load()
	var n int
	if old != nil {
		n = len(*old)
		if _, ok := (*old)[string(raw)]; ok {
			return
		}
	}
	if n >= maxMetas {
		return
	}
	next := make(map[string]struct{}, n+1)
	if old != nil {
		for k := range *old {
			next[k] = struct{}{}
		}
	}
	next[string(raw)] = struct{}{}
	m.set.Store(&next)
}
