package egress

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeHost is a hostAddrs whose interfaces and clock the test sets.
type fakeHost struct {
	mu    sync.Mutex
	addrs []string
	err   error
	reads atomic.Int32
	clock time.Time
}

func (f *fakeHost) set(err error, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs, f.err = addrs, err
}

func (f *fakeHost) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(d)
}

func (f *fakeHost) hosts() *hostAddrs {
	return &hostAddrs{
		interval: hostAddrsInterval,
		now: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.clock
		},
		list: func() ([]net.Addr, error) {
			f.reads.Add(1)
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.err != nil {
				return nil, f.err
			}
			var out []net.Addr
			for _, s := range f.addrs {
				p := netip.MustParsePrefix(s)
				out = append(out, &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
			}
			return out, nil
		},
	}
}

// TestAllowedRefusesHostAddrs: a public address assigned to one of this
// host's interfaces is refused like a private one, in its IPv4-mapped and
// 6to4 forms too, by Allowed, CheckLiteral and the dialer alike; the
// other addresses of its subnet (other machines) and a public address
// elsewhere are allowed. Nothing is dialled.
func TestAllowedRefusesHostAddrs(t *testing.T) {
	f := &fakeHost{}
	f.set(nil, "127.0.0.1/8", "8.8.4.4/24", "2001:4860:4860::8844/64", "::1/128")
	opts := Options{hosts: f.hosts()}
	for s, want := range map[string]bool{
		"8.8.4.4":              false,
		"::ffff:8.8.4.4":       false,
		"2002:808:404::1":      false, // 6to4 of 8.8.4.4
		"2001:4860:4860::8844": false,
		"8.8.4.5":              true,
		"2001:4860:4860::8888": true,
		"93.184.216.34":        true,
	} {
		addr := netip.MustParseAddr(s)
		if got := Allowed(addr, opts); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", s, got, want)
		}
		if !Allowed(addr, Options{AllowPrivate: true, hosts: opts.hosts}) {
			t.Errorf("AllowPrivate refused %s", s)
		}
		if err := CheckLiteral(s, opts); IsBlocked(err) == want {
			t.Errorf("CheckLiteral(%s) = %v, want refused %t", s, err, !want)
		}
	}
	err := Dialer(opts).Control("tcp4", "8.8.4.4:443", nil)
	var b *BlockedError
	if !errors.As(err, &b) || b.Addr != netip.MustParseAddr("8.8.4.4") || !IsConnectFailure(err) {
		t.Errorf("dialing the host's own address: %v, want a *BlockedError, a connect failure", err)
	}
	if err := Dialer(opts).Control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("dialing a public address elsewhere: %v", err)
	}
	if n := f.reads.Load(); n != 1 {
		t.Errorf("the interfaces were read %d times, want once", n)
	}
}

// TestHostAddrsRefresh: the interfaces are read on first use and again
// only once the reading is hostAddrsInterval old; a failed reading keeps
// the last set and is not retried before the next interval.
func TestHostAddrsRefresh(t *testing.T) {
	f := &fakeHost{clock: time.Unix(1e9, 0)}
	f.set(nil, "8.8.4.4/24")
	h := f.hosts()
	old, moved := netip.MustParseAddr("8.8.4.4"), netip.MustParseAddr("1.1.1.2")
	step := func(name string, reads int32, wantOld, wantMoved bool) {
		t.Helper()
		for range 3 {
			if got := h.contains(old); got != wantOld {
				t.Errorf("%s: contains(%s) = %v, want %v", name, old, got, wantOld)
			}
			if got := h.contains(moved); got != wantMoved {
				t.Errorf("%s: contains(%s) = %v, want %v", name, moved, got, wantMoved)
			}
		}
		if n := f.reads.Load(); n != reads {
			t.Errorf("%s: %d readings, want %d", name, n, reads)
		}
	}
	step("first use", 1, true, false)
	f.set(nil, "1.1.1.2/24")
	f.advance(hostAddrsInterval - time.Second)
	step("within the interval", 1, true, false)
	f.advance(time.Second)
	step("after the interval", 2, false, true)
	f.set(errors.New("netlink: no buffer space"))
	f.advance(hostAddrsInterval)
	step("a failed reading", 3, false, true)
	f.set(nil, "8.8.4.4/24")
	f.advance(hostAddrsInterval / 2)
	step("half an interval after the failure", 3, false, true)
	f.advance(hostAddrsInterval / 2)
	step("an interval after the failure", 4, true, false)
}

// TestHostAddrsConcurrent: callers racing a stale reading see either
// reading, and only one of them reads the interfaces again. Run with -race.
func TestHostAddrsConcurrent(t *testing.T) {
	f := &fakeHost{}
	f.set(nil, "8.8.4.4/24")
	h := f.hosts()
	h.contains(netip.Addr{})
	f.advance(hostAddrsInterval)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				h.contains(netip.MustParseAddr("8.8.4.4"))
			}
		}()
	}
	wg.Wait()
	if n := f.reads.Load(); n != 2 {
		t.Errorf("%d readings, want 2", n)
	}
}

// TestAllowedRefusesThisHostsAddress: with the process's own interfaces,
// every non-loopback address of this host is in the set Allowed consults
// and is refused, while a public address elsewhere is allowed.
func TestAllowedRefusesThisHostsAddress(t *testing.T) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var own []netip.Addr
	for _, a := range list {
		if n, ok := a.(*net.IPNet); ok {
			if addr, ok := netip.AddrFromSlice(n.IP); ok && !addr.Unmap().IsLoopback() {
				own = append(own, addr.Unmap())
			}
		}
	}
	if len(own) == 0 {
		t.Skip("this machine has only loopback addresses")
	}
	for _, addr := range own {
		if !localHost.contains(addr) {
			t.Errorf("%s is this host's, and not in the set", addr)
		}
		if Allowed(addr, Options{}) {
			t.Errorf("Allowed(%s), this host's own address", addr)
		}
		if !IsBlocked(CheckLiteral(addr.String(), Options{})) {
			t.Errorf("CheckLiteral(%s) did not refuse this host's own address", addr)
		}
	}
	public := netip.MustParseAddr("93.184.216.34")
	if !localHost.contains(public) && !Allowed(public, Options{}) {
		t.Errorf("Allowed(%s) = false, a public address elsewhere", public)
	}
}
