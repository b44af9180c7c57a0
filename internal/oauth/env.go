package oauth

import "strings"

// EndpointsFromEnv reads provider URL overrides from environment entries
// ("NAME=value"): QUIVER_OAUTH_<PROVIDER>_AUTH_URL and
// QUIVER_OAUTH_<PROVIDER>_TOKEN_URL, keyed by lower-case provider. They let
// tests and private deployments point a catalog provider elsewhere.
func EndpointsFromEnv(environ []string) map[string]Endpoint {
	out := map[string]Endpoint{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "QUIVER_OAUTH_")
		value = strings.TrimSpace(value)
		if !ok || value == "" {
			continue
		}
		var provider string
		var token bool
		switch {
		case strings.HasSuffix(rest, "_AUTH_URL"):
			provider = strings.TrimSuffix(rest, "_AUTH_URL")
		case strings.HasSuffix(rest, "_TOKEN_URL"):
			provider, token = strings.TrimSuffix(rest, "_TOKEN_URL"), true
		default:
			continue
		}
		provider = strings.ToLower(provider)
		ep := out[provider]
		if token {
			ep.TokenURL = value
		} else {
			ep.AuthURL = value
		}
		out[provider] = ep
	}
	return out
}
