package toolconfig

// Discovered oauth steps. A custom MCP server may answer its first contact
// with 401 and a pointer to its OAuth protected-resource metadata (RFC
// 9728). Its form step is then accepted, and the tool gains an oauth step
// found from that metadata: the provider's data is kept in the tool's plain
// config under DiscoveredKey (the client secret sealed), and toolSteps
// returns the catalog's steps plus that step. Reset forgets it with the rest
// of the configuration.

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// DiscoveredKey is the reserved plain-config key of a discovered provider.
// It is never shown in a tool's config.
const DiscoveredKey = "_oauth"

// DiscoveredOAuth is an OAuth provider found from a server's metadata.
type DiscoveredOAuth struct {
	Issuer           string   `json:"issuer"`
	AuthorizationURL string   `json:"authorization_endpoint"`
	TokenURL         string   `json:"token_endpoint"`
	Scopes           []string `json:"scopes,omitempty"`
	// Resource is the protected resource (RFC 8707 resource indicator).
	Resource string `json:"resource,omitempty"`
	// ResourceSealed is Resource sealed with the server's box, in its place,
	// when it holds what may be a key (connectors.HoldsSecret: the server's
	// URL with a token in its path), as the tool's url then is.
	ResourceSealed string `json:"resource_sealed,omitempty"`
	ClientID       string `json:"client_id"`
	// ClientSecret is sealed with the server's box; empty for a public client.
	ClientSecret string `json:"client_secret_sealed,omitempty"`
	// AuthMethod is how the client authenticates at the token endpoint:
	// client_secret_basic, client_secret_post or none.
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// IssParameterSupported is the server's RFC 9207 metadata: its
	// authorization responses always carry iss, so one without it is
	// refused.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	// RevocationURL is the server's RFC 7009 revocation endpoint, where
	// the tool's tokens are revoked when it is deleted or reset; empty
	// when its metadata named none.
	RevocationURL string `json:"revocation_endpoint,omitempty"`
}

// SealResource seals d's resource in its place when it holds what may be a
// key (connectors.HoldsSecret: the server's URL with a token in its path),
// as the tool's url then is, and reports whether it did.
func (d *DiscoveredOAuth) SealResource(box *secrets.Box) bool {
	if d.Resource == "" || !connectors.HoldsSecret(d.Resource) {
		return false
	}
	d.Resource, d.ResourceSealed = "", box.Seal([]byte(d.Resource))
	return true
}

// OpenResource returns d's resource, opened if it is sealed; "" if it has
// none.
func (d *DiscoveredOAuth) OpenResource(box *secrets.Box) (string, error) {
	if d.ResourceSealed == "" {
		return d.Resource, nil
	}
	b, err := box.Open(d.ResourceSealed)
	if err != nil {
		return "", errors.New("toolconfig: the discovered resource cannot be opened")
	}
	return string(b), nil
}

// Discovered returns the provider discovered for a tool, if any.
func Discovered(t *store.Tool) (*DiscoveredOAuth, bool) {
	if t == nil || t.Config == "" {
		return nil, false
	}
	var c struct {
		D *DiscoveredOAuth `json:"_oauth"`
	}
	if json.Unmarshal([]byte(t.Config), &c) != nil || c.D == nil {
		return nil, false
	}
	return c.D, true
}

// discoveredStep is the oauth step a discovered provider adds.
func discoveredStep(d *DiscoveredOAuth) catalog.Step {
	host := d.Issuer
	if u, err := url.Parse(d.Issuer); err == nil && u.Host != "" {
		host = u.Host
	}
	return catalog.Step{ID: "oauth", Type: catalog.StepOAuth, Title: "Authorize " + host,
		Description: "This MCP server uses OAuth: sign in at " + host + " and authorize Quiver."}
}

// stepsWith returns e's steps plus the step of a discovered provider held
// in plain.
func stepsWith(e *catalog.Entry, plain map[string]any) []catalog.Step {
	raw, ok := plain[DiscoveredKey]
	if !ok {
		return e.Steps
	}
	b, _ := json.Marshal(raw)
	var d DiscoveredOAuth
	if json.Unmarshal(b, &d) != nil || d.AuthorizationURL == "" {
		return e.Steps
	}
	return append(append([]catalog.Step(nil), e.Steps...), discoveredStep(&d))
}

// toolSteps returns the steps of a stored tool.
func (s *Service) toolSteps(t *store.Tool, e *catalog.Entry) []catalog.Step {
	if d, ok := Discovered(t); ok && d.AuthorizationURL != "" {
		return append(append([]catalog.Step(nil), e.Steps...), discoveredStep(d))
	}
	return e.Steps
}

// stepAt returns step i of steps, or nil.
func stepAt(steps []catalog.Step, i int) *catalog.Step {
	if i < 0 || i >= len(steps) {
		return nil
	}
	return &steps[i]
}

// discover turns a verify refusal from the server at serverURL that points
// at OAuth into a discovered provider stored in plain. handled is false when
// err is something else.
func (s *Service) discover(ctx context.Context, verifyErr error, serverURL string, plain map[string]any) (handled bool, err error) {
	d, ok := s.opts.OAuth.(Discoverer)
	if !ok {
		return false, nil
	}
	found, ok, err := d.Discover(ctx, verifyErr, serverURL)
	if !ok {
		return false, nil
	}
	if err != nil {
		var p *problem.Error
		if errors.As(err, &p) {
			return true, p
		}
		s.opts.Logger.WarnContext(ctx, "oauth discovery failed", "error", err)
		// The 401 stands: the server wants credentials, and a token it
		// accepts (one made at the provider by hand) is the way left.
		return true, problem.Validation("The server asks for OAuth authorization, but its OAuth metadata could not be used.",
			map[string]string{"bearer_token": "The server requires credentials (HTTP 401), and Quiver cannot use its OAuth provider: " +
				strings.TrimRight(err.Error(), ".") + "; give a bearer token the server accepts."})
	}
	plain[DiscoveredKey] = found
	return true, nil
}
