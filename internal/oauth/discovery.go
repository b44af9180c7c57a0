package oauth

// Discovery of an OAuth-protected MCP server from its URL alone:
//
//	server: 401 WWW-Authenticate: Bearer resource_metadata="…"
//	  (or a 401 naming none: the RFC 9728 §3 well-known URIs of the
//	  server's URL, path-inserted first, then the root)
//	  ─▶ GET resource metadata (RFC 9728): resource, authorization_servers
//	  ─▶ GET authorization server metadata (RFC 8414
//	     /.well-known/oauth-authorization-server, then OpenID discovery)
//	  ─▶ POST registration_endpoint (RFC 7591 dynamic client registration)
//	  ─▶ toolconfig.DiscoveredOAuth (client secret sealed; the server's
//	     revocation_endpoint kept for revoke.go); the tool's steps gain an
//	     oauth step that uses PKCE like every other.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// maxMetadata bounds a metadata or registration response.
const maxMetadata = 1 << 20

// resourceMetadata is RFC 9728 protected-resource metadata.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is RFC 8414 authorization server metadata.
type serverMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	RevocationEndpoint            string   `json:"revocation_endpoint"`
	ScopesSupported               []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
	// IssParameterSupported is RFC 9207's promise that every authorization
	// response carries iss.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
}

// Discover finds the OAuth provider of an MCP server that refused an
// unauthenticated request, from the resource metadata it pointed at or,
// when it named none, from the metadata at its well-known URIs; see
// toolconfig.Discoverer. A refusal that named none is not handled (ok
// false) unless one of them serves usable metadata: it is then the plain
// refusal it looked like.
func (f *Flow) Discover(ctx context.Context, verifyErr error, serverURL string) (*toolconfig.DiscoveredOAuth, bool, error) {
	var oe *mcp.OAuthRequiredError
	if !errors.As(verifyErr, &oe) {
		return nil, false, nil
	}
	if oe.ResourceMetadataURL == "" {
		rm, from := f.wellKnownMetadata(ctx, serverURL)
		if rm == nil {
			return nil, false, nil
		}
		d, err := f.discoverFrom(ctx, rm, from, oe.Scope, serverURL)
		return d, true, err
	}
	d, err := f.discover(ctx, oe.ResourceMetadataURL, oe.Scope, serverURL)
	return d, true, err
}

func (f *Flow) discover(ctx context.Context, metadataURL, scope, serverURL string) (*toolconfig.DiscoveredOAuth, error) {
	if downgrades(serverURL, metadataURL) {
		return nil, errors.New("its 401 points at protected-resource metadata over plain http, not https as the server itself is")
	}
	var rm resourceMetadata
	if err := f.getJSON(ctx, metadataURL, &rm); err != nil {
		return nil, fmt.Errorf("its protected-resource metadata: %w", err)
	}
	if err := rm.check(serverURL); err != nil {
		return nil, err
	}
	return f.discoverFrom(ctx, &rm, metadataURL, scope, serverURL)
}

// check reports why rm cannot serve the server at serverURL, if it cannot.
func (rm *resourceMetadata) check(serverURL string) error {
	if rm.Resource != "" && !resourceCovers(rm.Resource, serverURL) {
		return errors.New("its protected-resource metadata names another resource")
	}
	if len(rm.AuthorizationServers) == 0 {
		return errors.New("its protected-resource metadata names no authorization server")
	}
	return nil
}

// wellKnownMetadata returns the protected-resource metadata of the server
// at serverURL found at its well-known URIs (wellKnownResourceURIs), the
// first that serves a document rm.check accepts, and that URI; or nil. A document that
// is missing, unreadable or another resource's is passed over without a
// word: the server named no metadata, so its 401 stands as it was.
func (f *Flow) wellKnownMetadata(ctx context.Context, serverURL string) (*resourceMetadata, string) {
	for _, u := range wellKnownResourceURIs(serverURL) {
		var rm resourceMetadata
		if f.getJSON(ctx, u, &rm) == nil && rm.check(serverURL) == nil {
			return &rm, u
		}
		if ctx.Err() != nil {
			return nil, ""
		}
	}
	return nil, ""
}

// wellKnownResourceURIs are where RFC 9728 §3.1 puts the protected-resource
// metadata of the server at serverURL, in the order the MCP authorization
// spec has a client try them: with the URL's path inserted after the
// well-known prefix (https://h/.well-known/oauth-protected-resource/mcp for
// https://h/mcp), then at the root. The query is left out: a resource
// identifier has none (RFC 8707), and it may hold a key.
func wellKnownResourceURIs(serverURL string) []string {
	u, err := url.Parse(serverURL)
	if err != nil || !httpURL(serverURL) {
		return nil
	}
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	if path := strings.TrimRight(u.EscapedPath(), "/"); path != "" {
		return []string{root + path, root}
	}
	return []string{root}
}

// discoverFrom goes on from protected-resource metadata rm, read at
// rmURL, that check accepted for the server at serverURL.
//
// A URL learned from a document read over TLS is used only over TLS: the
// authorization code, the client secret and the tokens never go in the
// clear because a metadata document (misconfigured, or changed on its way
// from a server that is not TLS's to check) said so.
func (f *Flow) discoverFrom(ctx context.Context, rm *resourceMetadata, rmURL, scope, serverURL string) (*toolconfig.DiscoveredOAuth, error) {
	issuer := rm.AuthorizationServers[0]
	if downgrades(rmURL, issuer) {
		return nil, errors.New("its protected-resource metadata names an authorization server over plain http, not https as the metadata itself is")
	}
	sm, err := f.serverMetadata(ctx, issuer)
	if err != nil {
		return nil, err
	}
	if sm.AuthorizationEndpoint == "" || sm.TokenEndpoint == "" {
		return nil, errors.New("the authorization server's metadata lacks its endpoints")
	}
	for _, e := range []struct{ name, url string }{
		{"authorization endpoint", sm.AuthorizationEndpoint}, {"token endpoint", sm.TokenEndpoint}, {"registration endpoint", sm.RegistrationEndpoint},
	} {
		if e.url != "" && !httpURL(e.url) {
			return nil, errors.New("the authorization server's metadata has an endpoint that is not an http(s) URL")
		}
		if downgrades(issuer, e.url) {
			return nil, fmt.Errorf("the authorization server's metadata names its %s over plain http, not https as the server itself is", e.name)
		}
	}
	if p := presetParam(sm.AuthorizationEndpoint); p != "" {
		return nil, fmt.Errorf("the authorization server's authorization endpoint already carries %q in its query, which Quiver sets itself (RFC 6749 §3.1: a parameter is sent once)", p)
	}
	// The MCP authorization spec: metadata that does not list S256 in
	// code_challenge_methods_supported, or lists no methods at all, is
	// refused, as nothing then says the server checks PKCE.
	if !slices.Contains(sm.CodeChallengeMethodsSupported, "S256") {
		return nil, errors.New("the authorization server's metadata does not say it supports PKCE with S256 (code_challenge_methods_supported), which the MCP authorization spec requires")
	}
	if sm.RegistrationEndpoint == "" {
		return nil, errors.New("the authorization server offers no dynamic client registration, so Quiver cannot register itself there")
	}
	var scopes []string
	switch {
	case scope != "":
		scopes = strings.Fields(scope)
	case len(rm.ScopesSupported) > 0:
		scopes = rm.ScopesSupported
	}
	reg, err := f.register(ctx, sm, scopes)
	if err != nil {
		return nil, err
	}
	resource := rm.Resource
	if resource == "" {
		// The server's URL without its query (RFC 8707: a resource should
		// have none), which may hold a key the tool's configuration keeps
		// sealed.
		resource, _, _ = strings.Cut(serverURL, "?")
		resource, _, _ = strings.Cut(resource, "#")
	}
	d := &toolconfig.DiscoveredOAuth{
		Issuer: sm.Issuer, AuthorizationURL: sm.AuthorizationEndpoint, TokenURL: sm.TokenEndpoint,
		Scopes: scopes, Resource: resource, ClientID: reg.ClientID, AuthMethod: reg.AuthMethod,
		IssParameterSupported: sm.IssParameterSupported,
	}
	if httpURL(sm.RevocationEndpoint) && !downgrades(issuer, sm.RevocationEndpoint) {
		// Optional, and only ever used on a best-effort basis: one that
		// is not an http(s) URL, or is plain http for an https server, is
		// left out, not a reason to refuse.
		d.RevocationURL = sm.RevocationEndpoint
	}
	// A token in the server's path (or a resource the metadata names with
	// one) is stored sealed, as the tool's url is. It still goes to the
	// authorization server, which must know what the token is for, and so
	// is in the authorization link shown to the tool's owner.
	d.SealResource(f.opts.Box)
	if reg.ClientSecret != "" {
		d.ClientSecret = f.opts.Box.Seal([]byte(reg.ClientSecret))
	}
	return d, nil
}

// serverMetadata fetches RFC 8414 metadata, falling back to OpenID
// Connect discovery, and checks it is the issuer's own.
func (f *Flow) serverMetadata(ctx context.Context, issuer string) (*serverMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil || !httpURL(issuer) {
		return nil, errors.New("the authorization server's issuer is not an http(s) URL")
	}
	path := strings.TrimSuffix(u.Path, "/")
	base := u.Scheme + "://" + u.Host
	candidates := []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		candidates = append(candidates, base+path+"/.well-known/openid-configuration")
	}
	// The error to report is the first that is not a 404: a document that
	// is there but unreadable says more than the places it is not.
	var failed error
	for _, c := range candidates {
		var sm serverMetadata
		if err := f.getJSON(ctx, c, &sm); err != nil {
			if failed == nil || (errors.Is(failed, errNotThere) && !errors.Is(err, errNotThere)) {
				failed = fmt.Errorf("%s: %w", c, err)
			}
			continue
		}
		// RFC 8414 §3.3: metadata whose issuer is not the one its URI was
		// made from is not used, and one naming none cannot show it is.
		if sm.Issuer == "" {
			return nil, errors.New("the authorization server's metadata names no issuer, so Quiver cannot tell it is the server's own (RFC 8414 §3.3)")
		}
		if strings.TrimSuffix(sm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, errors.New("the authorization server's metadata names another issuer")
		}
		return &sm, nil
	}
	if errors.Is(failed, errNotThere) {
		return nil, fmt.Errorf("the authorization server's metadata is at none of %s", strings.Join(candidates, ", "))
	}
	return nil, fmt.Errorf("the authorization server's metadata at %w", failed)
}

type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	AuthMethod   string `json:"token_endpoint_auth_method"`
}

// register registers Quiver as a client (RFC 7591).
func (f *Flow) register(ctx context.Context, sm *serverMetadata, scopes []string) (*registration, error) {
	method := "client_secret_basic"
	if m := sm.TokenEndpointAuthMethods; len(m) > 0 && !slices.Contains(m, method) {
		switch {
		case slices.Contains(m, "client_secret_post"):
			method = "client_secret_post"
		case slices.Contains(m, "none"):
			method = "none"
		}
	}
	body := map[string]any{
		"client_name":                "Quiver",
		"redirect_uris":              []string{f.RedirectURL()},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	}
	if len(scopes) > 0 {
		body["scope"] = strings.Join(scopes, " ")
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sm.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return nil, errors.New("the registration endpoint is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := f.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("registering a client: %s", safeError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("registering a client: the server answered HTTP %d", resp.StatusCode)
	}
	var reg registration
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(&reg); err != nil || reg.ClientID == "" {
		return nil, errors.New("registering a client: the answer has no client_id")
	}
	switch reg.AuthMethod {
	case "":
		reg.AuthMethod = method
	case "client_secret_basic", "client_secret_post", "none":
	default:
		// The server may register another method than the one asked for
		// (RFC 7591 §3.2.1). One Quiver cannot use would only fail at the
		// code exchange, after the person has authorized at the provider.
		return nil, fmt.Errorf("registering a client: the server registered Quiver for the token endpoint authentication method %q, which Quiver does not support (it uses client_secret_basic, client_secret_post or none)", sanitizeCode(reg.AuthMethod))
	}
	return &reg, nil
}

// errNotThere is getJSON's error for a document its server does not have.
var errNotThere = errors.New("HTTP 404")

// getJSON fetches a metadata document.
func (f *Flow) getJSON(ctx context.Context, u string, v any) error {
	if !httpURL(u) {
		return errors.New("not an http(s) URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errors.New("not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.opts.HTTPClient.Do(req)
	if err != nil {
		return errors.New(strings.Replace(safeError(err), "provider", "server", 1))
	}
	defer resp.Body.Close()
	if downgrades(u, resp.Request.URL.String()) {
		return errors.New("redirected from https to plain http")
	}
	if resp.StatusCode == http.StatusNotFound {
		return errNotThere
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(v); err != nil {
		return errors.New("not valid JSON")
	}
	return nil
}

// downgrades reports whether going from a URL learned at from to the URL
// to would leave TLS: from is https and to is plain http.
func downgrades(from, to string) bool {
	f, err1 := url.Parse(from)
	t, err2 := url.Parse(to)
	return err1 == nil && err2 == nil && strings.EqualFold(f.Scheme, "https") && strings.EqualFold(t.Scheme, "http")
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// resourceCovers reports whether the protected resource named resource is
// the server at serverURL or holds it: the same origin, and a path that is
// the server's or a whole-segment prefix of it (https://h/ and https://h/mcp
// cover https://h/mcp; https://h/other and https://h/mc do not). RFC 9728
// §3.3 has a client use no metadata of another resource; a token asked for
// another resource on the same host would not be the server's to take.
func resourceCovers(resource, serverURL string) bool {
	if !sameOrigin(resource, serverURL) {
		return false
	}
	r, _ := url.Parse(resource)
	u, _ := url.Parse(serverURL)
	rp, up := strings.TrimRight(r.EscapedPath(), "/"), strings.TrimRight(u.EscapedPath(), "/")
	return rp == "" || rp == up || strings.HasPrefix(up, rp+"/")
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// presetParam returns a parameter of an authorization request that the
// endpoint's own query already holds, or "". Sent twice, state would fail
// the callback's check and the others are ambiguous to the server.
func presetParam(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	q := u.Query()
	for _, p := range []string{"response_type", "client_id", "redirect_uri", "scope", "state",
		"code_challenge", "code_challenge_method", "resource"} {
		if q.Has(p) {
			return p
		}
	}
	return ""
}
