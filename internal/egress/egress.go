// Package egress builds the HTTP transports Quiver uses to reach tools on
// addresses that users chose. It refuses, at dial time, connections to
// loopback, link-local, private and other non-public addresses, and any
// address of this host's own interfaces, unless the operator allowed them,
// so a DNS record that changes after a URL was checked cannot point a tool
// inside the server's own network or at the server itself.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Options configures a transport.
type Options struct {
	// AllowPrivate permits loopback, link-local, private and reserved
	// addresses, and this host's own (QUIVER_EGRESS_ALLOW_PRIVATE).
	AllowPrivate bool
	// DialTimeout bounds connection set-up; zero means 10s.
	DialTimeout time.Duration
	// IdleTimeout is how long Transport keeps an idle connection for reuse;
	// zero means DefaultIdleTimeout. It is a field so that a test can
	// shorten it together with its server's.
	IdleTimeout time.Duration

	// hosts is the set of this host's addresses to refuse; nil means the
	// process's own (localHost). Tests set it.
	hosts *hostAddrs
}

// DefaultIdleTimeout is how long a transport's idle connection may wait
// and still be reused. A server closes an idle connection when its own
// keep-alive timeout runs out, and a request written into it while that
// close is on its way (about a round trip) is lost unread. net/http then
// re-sends only a request it may repeat, which connectors.Send leaves only
// a GET, HEAD, OPTIONS or TRACE: a POST or PATCH ends with its outcome
// unknown (504 tool_outcome_unknown), an OAuth refresh with its answer
// lost. 4 s is under the 5 s for which Node's http server, uvicorn and
// Apache keep an idle connection by default, by a margin for the request's
// way there; Node's own client (undici) keeps one 4 s too, as the MCP
// connector's fast path does when its server gives no Keep-Alive hint.
const DefaultIdleTimeout = 4 * time.Second

// BlockedError is returned when a dial targets an address that is not allowed.
// Nothing was sent when it is returned.
type BlockedError struct {
	Addr netip.Addr
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("egress to %s is not allowed: it is a loopback, link-local, private or reserved address, or one of this host's own", e.Addr)
}

// IsBlocked reports whether err (or an error it wraps) is a *BlockedError.
func IsBlocked(err error) bool {
	var b *BlockedError
	return errors.As(err, &b)
}

// Non-public ranges that net/netip has no predicate for.
var (
	reserved4 = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),     // "this network" (RFC 791); Linux dials 0.0.0.0 as the host itself
		netip.MustParsePrefix("100.64.0.0/10"), // shared address space, carrier-grade NAT (RFC 6598)
		netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments (RFC 6890)
		netip.MustParsePrefix("198.18.0.0/15"), // benchmarking (RFC 2544)
		netip.MustParsePrefix("240.0.0.0/4"),   // reserved (RFC 1112), and 255.255.255.255, broadcast
		// Documentation (RFC 5737): never a real server.
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
	}
	// Non-public IPv6 ranges without a netip predicate: the deprecated
	// site-local fec0::/10 (RFC 3879), which some stacks still route
	// locally, documentation (RFC 3849), Teredo (RFC 4380), whose relays
	// reach an IPv4 address hidden (obfuscated) in the address, and NAT64.
	reserved6 = []netip.Prefix{
		netip.MustParsePrefix("fec0::/10"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"), // documentation too (RFC 9637)
		netip.MustParsePrefix("2001::/32"),
		// Not globally reachable (IANA's special-purpose registry), so never
		// a public server: benchmarking (RFC 5180), 198.18.0.0/15's twin;
		// discard-only and dummy prefixes (RFC 6666, RFC 9780); SRv6
		// segment IDs (RFC 9602), which an operator's routers deliver to
		// functions inside its network.
		netip.MustParsePrefix("2001:2::/48"),
		netip.MustParsePrefix("100::/63"),
		netip.MustParsePrefix("5f00::/16"),
		// IPv4-translated addresses, ::ffff:0:a.b.c.d (RFC 2765 SIIT): a
		// translator forwards them to the IPv4 address they embed, as NAT64
		// does, and they are refused whole for the same reason.
		netip.MustParsePrefix("::ffff:0:0:0/96"),
		// NAT64 prefixes (RFC 6052, RFC 8215): a translator forwards these
		// to the IPv4 address in their last 32 bits, which may be private.
		// The whole prefixes are refused rather than the embedded address
		// checked, for simplicity: the cost is that on an IPv6-only network
		// with DNS64, servers reachable only over IPv4 are refused too.
		netip.MustParsePrefix("64:ff9b::/96"),
		netip.MustParsePrefix("64:ff9b:1::/48"),
	}
	// sixToFour is 6to4 (RFC 3056): a relay forwards 2002:AABB:CCDD::/48 to
	// the IPv4 address AA.BB.CC.DD, checked as that address.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// compat4 holds the deprecated IPv4-compatible IPv6 addresses, ::a.b.c.d
	// (RFC 4291 §2.5.5.1), checked as the IPv4 address they embed, as
	// IPv4-mapped ones are.
	compat4 = netip.MustParsePrefix("::/96")
)

// Allowed reports whether a connection to addr is allowed under opts. Unless
// opts.AllowPrivate, it refuses loopback, private, link-local, multicast,
// unspecified, reserved and documentation addresses, NAT64, IPv4-translated
// and Teredo ones, any address assigned to one of this host's network
// interfaces (read again at most every 30 s), and the IPv4-mapped,
// IPv4-compatible and 6to4 forms of every refused IPv4 address.
func Allowed(addr netip.Addr, opts Options) bool {
	if opts.AllowPrivate {
		return true
	}
	// Prefix.Contains never matches an address with a zone.
	addr = addr.WithZone("").Unmap()
	if compat4.Contains(addr) {
		addr = netip.AddrFrom4([4]byte(addr.AsSlice()[12:]))
	} else if sixToFour.Contains(addr) {
		addr = netip.AddrFrom4([4]byte(addr.AsSlice()[2:6]))
	}
	switch {
	case addr.IsLoopback(), addr.IsPrivate(), addr.IsLinkLocalUnicast(),
		addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(),
		addr.IsMulticast(), addr.IsUnspecified():
		return false
	}
	ranges := reserved6
	if addr.Is4() {
		ranges = reserved4
	}
	for _, p := range ranges {
		if p.Contains(addr) {
			return false
		}
	}
	// A public address of this host reaches whatever it serves on 0.0.0.0.
	hosts := opts.hosts
	if hosts == nil {
		hosts = localHost
	}
	return !hosts.contains(addr)
}

// lookupTimeout bounds CheckHost's lookup: a slow resolver makes it give
// up and leave the check to the dial, not hold the caller.
const lookupTimeout = 5 * time.Second

// CheckLiteral returns a *BlockedError when host (a URL's Hostname) is an IP
// address that opts refuses, and nil for an allowed address or a name. It
// lets a caller refuse up front what the dialer would refuse for sure.
func CheckLiteral(host string, opts Options) error {
	addr, err := netip.ParseAddr(host)
	if err != nil || Allowed(addr, opts) {
		return nil
	}
	return &BlockedError{Addr: addr}
}

// CheckHost is CheckLiteral, and for a name also looks it up now: a name
// every address of which opts refuses gets a *BlockedError. A name that does
// not resolve (or not within lookupTimeout) is not refused: whether DNS is up
// is the dial's to report. Passing is no promise, since a record can change;
// the dialer checks again at every connection.
func CheckHost(ctx context.Context, host string, opts Options) error {
	if opts.AllowPrivate {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return CheckLiteral(host, opts)
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil
	}
	for _, a := range addrs {
		if Allowed(a, opts) {
			return nil
		}
	}
	return &BlockedError{Addr: addrs[0].Unmap()}
}

// Dialer returns a dialer that checks every address it connects to, after
// DNS resolution.
func Dialer(opts Options) *net.Dialer {
	timeout := opts.DialTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	return &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("egress: unparsable address %q: %w", address, err)
			}
			if !Allowed(ap.Addr(), opts) {
				return &BlockedError{Addr: ap.Addr()}
			}
			return nil
		},
	}
}

// Transport returns an HTTP transport whose connections go through Dialer.
// It ignores proxy settings from the environment: a proxy would dial on our
// behalf and defeat the check. An idle connection is reused for
// opts.IdleTimeout (DefaultIdleTimeout), not net/http's 90 s, so that a
// request is not written into a connection its server is closing.
func Transport(opts Options) *http.Transport {
	d := Dialer(opts)
	idle := opts.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       idle,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// IsConnectFailure reports whether err means the request provably never
// left: the dial was refused or blocked, or the name did not resolve.
func IsConnectFailure(err error) bool {
	if IsBlocked(err) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
