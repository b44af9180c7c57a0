package httprequest

import (
	"context"
	"net/http"
	"net/url"

	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

var _ connectors.Verifier = (*Connector)(nil)

// Verify checks the step being answered. At the base_url step (the one
// without auth_type, which has a default and so is always among the auth
// step's answers) it refuses a URL that carries user information, since
// the auth step is where credentials go, and one whose host the egress
// guard would refuse: a literal private address, or a name that resolves
// now only to such addresses. A name that does not resolve is accepted: the calls report it.
// At the auth step it refuses what authenticate would refuse on every call,
// without reaching the network: a base URL says nothing about where its
// credentials could be tried. Either way such a configuration is corrected
// at its step rather than failing each call later. A problem is a
// *connectors.FieldError.
func (c *Connector) Verify(ctx context.Context, _ *catalog.Entry, config map[string]string) error {
	var field, msg string
	if _, authStep := config[ConfigAuthType]; authStep {
		field, msg = authProblem(config)
	} else {
		field, msg = c.baseURLProblem(ctx, config[ConfigBaseURL])
	}
	if field == "" {
		return nil
	}
	return &connectors.FieldError{Field: field, Message: msg}
}

// baseURLProblem returns ConfigBaseURL and why it is refused, or "" when
// requests may be sent under it. The message never repeats the URL, whose
// user info may hold a password.
func (c *Connector) baseURLProblem(ctx context.Context, raw string) (field, msg string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ConfigBaseURL, "must be an http:// or https:// URL"
	}
	if u.User != nil {
		return ConfigBaseURL, "must not carry credentials (user:password@): put credentials in the auth step"
	}
	host := u.Hostname()
	if egress.CheckLiteral(host, c.guard) != nil {
		return ConfigBaseURL, host + " is a loopback, link-local, private or reserved address, or one of this host's own, which Quiver may not reach"
	}
	if egress.IsBlocked(egress.CheckHost(ctx, host, c.guard)) {
		return ConfigBaseURL, host + " resolves only to loopback, link-local, private or reserved addresses, or this host's own, which Quiver may not reach"
	}
	return "", ""
}

// authProblem returns the field at fault in config's authentication and why,
// or "" when requests can be authenticated with it.
func authProblem(config map[string]string) (field, msg string) {
	switch config[ConfigAuthType] {
	case "", AuthNone:
		return "", ""
	case AuthBearer:
		if config[ConfigToken] == "" {
			return ConfigToken, "is required when auth_type is bearer"
		}
	case AuthHeader:
		if config[ConfigToken] == "" {
			return ConfigToken, "is required when auth_type is header"
		}
		name := config[ConfigHeaderName]
		if !httpguts.ValidHeaderFieldName(name) {
			return ConfigHeaderName, "is not a valid HTTP header name"
		}
		if canonical := http.CanonicalHeaderKey(name); reserved(canonical) {
			return ConfigHeaderName, canonical + " is managed by the HTTP client and cannot carry the token; name another header"
		}
	default:
		return ConfigAuthType, "must be one of none, bearer, header"
	}
	return "", ""
}
