package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// checkBaseURL checks the URL in variable name, a base that Quiver
// appends paths to (QUIVER_PUBLIC_URL + /api/v1/oauth/callback is the
// OAuth redirect URI): absolute http(s), and without a query or fragment,
// which would come before the appended path and cut it off. With
// noCredentials, user information is refused too: the public URL is shown
// to every OAuth provider and browser.
func checkBaseURL(name, raw string, noCredentials bool) error {
	if err := checkHTTPURL(name, raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	switch {
	case strings.Contains(raw, "?"):
		return fmt.Errorf("%s: must not have a query (?...): paths are appended to it", name)
	case strings.Contains(raw, "#"):
		return fmt.Errorf("%s: must not have a fragment (#...): paths are appended to it", name)
	case noCredentials && u.User != nil:
		return fmt.Errorf("%s: must not carry credentials (user:password@): OAuth providers and browsers are shown it", name)
	}
	return nil
}

// checkHTTPURL checks the URL in variable name: absolute http(s), and a
// port, when it has one, from 1 to 65535. A port that is no number fails
// url.Parse; it is named as the port at fault, not as a URL that is not
// absolute.
func checkHTTPURL(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		if port, ok := rawPort(raw); ok && !validPort(port) {
			return fmt.Errorf("%s: port %q is not a number from 1 to 65535", name, port)
		}
		return fmt.Errorf("%s: must be an absolute http(s) URL", name)
	}
	switch {
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%s: must be an absolute http(s) URL", name)
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Errorf("%s: port %q is not a number from 1 to 65535", name, u.Port())
	}
	return nil
}

// rawPort is the port of an http(s) URL that url.Parse refused, read from
// its authority as written: what follows the last colon after the host (an
// IPv6 literal's closing bracket, when it has one).
func rawPort(raw string) (string, bool) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(raw, "https://"); !ok {
			return "", false
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if i := strings.LastIndexByte(rest, ']'); i >= 0 {
		rest = rest[i+1:]
	}
	_, port, ok := strings.Cut(rest, ":")
	return port, ok && port != ""
}

// badHostPort returns the first port of a libpq URL's hosts (h1:5432,h2)
// that no host can have, if one is.
func badHostPort(hosts string) (string, bool) {
	for _, h := range strings.Split(hosts, ",") {
		if i := strings.LastIndexByte(h, ']'); i >= 0 {
			h = h[i+1:]
		}
		if _, port, ok := strings.Cut(h, ":"); ok && port != "" && !validPort(port) {
			return port, true
		}
	}
	return "", false
}

// validPort reports whether port, a URL's digits, is one a host can have.
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// PublicURLWarning is what serve warns of at start when QUIVER_PUBLIC_URL
// is unset and QUIVER_ADDR listens on a port other than the default's:
// OAuth providers would send the browser back to a port nothing serves,
// and no OAuth tool could be connected. "" when there is nothing to say
// (port 0, a free port, is a test's).
func (c *Config) PublicURLWarning() string {
	if c.publicURLSet {
		return ""
	}
	_, port, err := net.SplitHostPort(c.Addr)
	def, _ := url.Parse(DefaultPublicURL)
	if err != nil || port == "0" || port == def.Port() {
		return ""
	}
	return fmt.Sprintf("QUIVER_PUBLIC_URL is not set, so OAuth providers send the browser back to %s/api/v1/oauth/callback, "+
		"but QUIVER_ADDR listens on port %s: set QUIVER_PUBLIC_URL to the address this server is reached at "+
		"(http://localhost:%s here, or the public URL in front of it), or OAuth tools cannot be connected", DefaultPublicURL, port, port)
}

// PprofWarning is what serve warns of at start when QUIVER_PPROF_ADDR
// listens beyond loopback: the profiles, the command line and every
// goroutine's stack are served there to whoever reaches it, with no API
// key. "" when it is off or on loopback.
func (c *Config) PprofWarning() string {
	if c.PprofAddr == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(c.PprofAddr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return ""
	}
	where := host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		where = "every interface"
	}
	return fmt.Sprintf("QUIVER_PPROF_ADDR listens on %s: the runtime profiles, the command line and every goroutine's stack "+
		"are served there to whoever reaches it, without an API key; keep it on loopback (127.0.0.1:6060)", where)
}
