package httprequest

import (
	"context"
	"net/http"

	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
)

var _ connectors.Verifier = (*Connector)(nil)

// Verify checks the authentication a configuration step gathered, without
// reaching the network: a base URL says nothing about where its credentials
// could be tried. It refuses what authenticate would refuse on every call,
// so such a configuration is corrected at its step rather than failing each
// call later. A problem is a *connectors.FieldError.
func (c *Connector) Verify(_ context.Context, _ *catalog.Entry, config map[string]string) error {
	field, msg := authProblem(config)
	if field == "" {
		return nil
	}
	return &connectors.FieldError{Field: field, Message: msg}
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
