// Package egress builds the HTTP transports Quiver uses to reach tools on
// addresses that users chose. It refuses, at dial time, connections to
// loopback, link-local, private and other non-public addresses unless the
// operator allowed them, so a DNS record that changes after a URL was checked
// cannot point a tool inside the server's own network.
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
	// AllowPrivate permits loopback, link-local and private addresses
	// (QUIVER_EGRESS_ALLOW_PRIVATE).
	AllowPrivate bool
	// DialTimeout bounds connection set-up; zero means 10s.
	DialTimeout time.Duration
}

// BlockedError is returned when a dial targets an address that is not allowed.
// Nothing was sent when it is returned.
type BlockedError struct {
	Addr netip.Addr
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("egress to %s is not allowed: it is a loopback, link-local or private address", e.Addr)
}

// IsBlocked reports whether err (or an error it wraps) is a *BlockedError.
func IsBlocked(err error) bool {
	var b *BlockedError
	return errors.As(err, &b)
}

// Allowed reports whether a connection to addr is allowed under opts.
func Allowed(addr netip.Addr, opts Options) bool {
	if opts.AllowPrivate {
		return true
	}
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback(), addr.IsPrivate(), addr.IsLinkLocalUnicast(),
		addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(),
		addr.IsMulticast(), addr.IsUnspecified():
		return false
	}
	// 100.64.0.0/10 (carrier-grade NAT) is not public either.
	if addr.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(addr) {
		return false
	}
	return true
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
// behalf and defeat the check.
func Transport(opts Options) *http.Transport {
	d := Dialer(opts)
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
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
