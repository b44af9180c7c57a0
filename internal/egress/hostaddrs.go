package egress

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// hostAddrsInterval is how long a reading of this host's interface
// addresses is used before it is read again. Interfaces change seldom
// (DHCP, a cloud's elastic IP moved, a container network added); the cost
// of a stale set is that a tool may reach, for at most this long, an
// address the host just took.
const hostAddrsInterval = 30 * time.Second

// hostAddrs is the set of addresses assigned to this host's network
// interfaces. A public one is not refused by any range, yet a tool URL
// naming it reaches every service on the host that listens on 0.0.0.0 or
// [::] (its metrics, its database, its own API from inside), so Allowed
// refuses these too.
//
// The set is read on first use and then again, lazily, at most once per
// interval: the one caller that finds it stale reads it (one netlink dump,
// much cheaper than the dial it guards) while the others go on with the
// last reading. There is no background goroutine to stop.
type hostAddrs struct {
	list     func() ([]net.Addr, error) // net.InterfaceAddrs
	interval time.Duration
	now      func() time.Time

	mu  sync.Mutex // held by the caller reading the interfaces
	cur atomic.Pointer[hostSnapshot]
}

type hostSnapshot struct {
	addrs  map[netip.Addr]struct{}
	readAt time.Time
}

// localHost is the set Allowed consults unless Options.hosts names another
// (a test's). It is package state because it is a fact about the process's
// host, shared by every transport, as net.DefaultResolver is.
var localHost = &hostAddrs{list: net.InterfaceAddrs, interval: hostAddrsInterval, now: time.Now}

// contains reports whether addr, unmapped and without a zone, is assigned
// to one of the host's interfaces.
func (h *hostAddrs) contains(addr netip.Addr) bool {
	s := h.cur.Load()
	switch {
	case s == nil:
		// The first use waits for the first reading.
		h.mu.Lock()
		if s = h.cur.Load(); s == nil {
			s = h.read(nil)
		}
		h.mu.Unlock()
	case h.now().Sub(s.readAt) >= h.interval && h.mu.TryLock():
		if s2 := h.cur.Load(); s2 != s {
			s = s2 // another caller read it meanwhile
		} else {
			s = h.read(s)
		}
		h.mu.Unlock()
	}
	_, ok := s.addrs[addr]
	return ok
}

// read lists the interfaces' addresses and stores them. If listing fails it
// keeps the previous set (empty at first) and tries again an interval
// later, not at every dial. h.mu must be held.
func (h *hostAddrs) read(prev *hostSnapshot) *hostSnapshot {
	s := &hostSnapshot{readAt: h.now()}
	list, err := h.list()
	switch {
	case err != nil && prev != nil:
		s.addrs = prev.addrs
	case err != nil:
		s.addrs = map[netip.Addr]struct{}{}
	default:
		s.addrs = make(map[netip.Addr]struct{}, len(list))
		for _, a := range list {
			var ip net.IP
			switch a := a.(type) {
			case *net.IPNet:
				ip = a.IP
			case *net.IPAddr:
				ip = a.IP
			}
			if addr, ok := netip.AddrFromSlice(ip); ok {
				s.addrs[addr.Unmap()] = struct{}{}
			}
		}
	}
	h.cur.Store(s)
	return s
}
