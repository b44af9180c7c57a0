package mcpserver

import (
	"net/url"
	"strconv"
	"strings"
)

// originAllowed reports whether a request carrying an Origin header, which
// browsers set, may reach the endpoint: the streamable-HTTP transport asks
// servers to validate it (a page on another site, or a rebinding domain,
// must not drive an agent's tools), and to refuse with 403 an origin they
// do not accept. Accepted: the request's own host (same origin), and the
// origin of QUIVER_PUBLIC_URL (behind a proxy, where Host may be another
// name). Clients that are not browsers send no Origin and are not affected;
// the API key is still required of every request.
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (a sandboxed page, a file) and anything malformed
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	pub, err := url.Parse(s.opts.PublicURL)
	return err == nil && pub.Host != "" && strings.EqualFold(u.Scheme, pub.Scheme) && strings.EqualFold(u.Host, pub.Host)
}

// clipOrigin quotes an Origin header for a message, cut to a sane length.
func clipOrigin(origin string) string {
	if len(origin) > 100 {
		origin = origin[:100] + "…"
	}
	return strconv.Quote(origin)
}
