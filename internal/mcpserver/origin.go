package mcpserver

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// originAllowed reports whether a request carrying an Origin header, which
// browsers set, may reach the endpoint: the streamable-HTTP transport asks
// servers to validate it and to refuse with 403 an origin they do not
// accept, so that a page on another site cannot drive an agent's tools.
// Accepted: the request's own host (same origin; its scheme is not known
// behind a proxy that ends TLS, so either), and the origin of
// QUIVER_PUBLIC_URL (behind a proxy, where Host may be another name).
// Ports are compared with the scheme's default filled in. Clients that are
// not browsers send no Origin and are not affected. Against DNS rebinding
// (a page whose origin is the rebound name, which is then also the Host)
// this does nothing: the API key every request needs is that defence.
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (a sandboxed page, a file) and anything malformed
	}
	o := hostPort(u.Host, u.Scheme)
	if o == hostPort(host, u.Scheme) {
		return true
	}
	pub, err := url.Parse(s.opts.PublicURL)
	return err == nil && pub.Host != "" && strings.EqualFold(u.Scheme, pub.Scheme) && o == hostPort(pub.Host, pub.Scheme)
}

// hostPort is host ("name" or "name:port") in lower case with its port,
// the scheme's default when it has none.
func hostPort(host, scheme string) string {
	name, port, err := net.SplitHostPort(host)
	if err != nil { // no port
		name, port = strings.Trim(host, "[]"), "80"
		if strings.EqualFold(scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(name), port)
}

// clipOrigin quotes an Origin header for a message, cut to a sane length.
func clipOrigin(origin string) string {
	if len(origin) > 100 {
		origin = origin[:100] + "…"
	}
	return strconv.Quote(origin)
}
