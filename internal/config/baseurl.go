package config

import (
	"fmt"
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
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%s: must be an absolute http(s) URL", name)
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Errorf("%s: port %q is not from 1 to 65535", name, u.Port())
	case strings.Contains(raw, "?"):
		return fmt.Errorf("%s: must not have a query (?...): paths are appended to it", name)
	case strings.Contains(raw, "#"):
		return fmt.Errorf("%s: must not have a fragment (#...): paths are appended to it", name)
	case noCredentials && u.User != nil:
		return fmt.Errorf("%s: must not carry credentials (user:password@): OAuth providers and browsers are shown it", name)
	}
	return nil
}

// validPort reports whether port, a URL's digits, is one a host can have.
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}
