// Package oauth is Quiver's OAuth 2.0 client side for connected tools: the
// providers (catalog data plus the platform's client, or discovered from an
// MCP server's metadata), the authorization URL with its single-use state
// and PKCE, the callback that exchanges the code, the refresh that keeps a
// token fresh exactly once across goroutines and replicas, discovery of
// an OAuth-protected MCP server (RFC 9728, RFC 8414, RFC 7591), and the
// revocation of a disconnected tool's tokens (RFC 7009).
//
// It implements toolconfig.OAuthFlow, toolconfig.TokenRefresher,
// toolconfig.Discoverer and toolconfig.TokenRevoker; toolconfig decides
// what a tool's state becomes. It
// must never log, return or show a token, a code, a client secret or a PKCE
// verifier: errors from providers are reduced to their error code.
//
// The connect flow:
//
//	GET tool ─▶ oauth step: authorization_url (state → oauth_states, hashed;
//	            state and verifier sealed; expires after StateTTL; shown
//	            again while it has half of StateTTL left)
//	user ─▶ provider ─▶ 302 /api/v1/oauth/callback?code&state
//	callback ─▶ consume state (conditional UPDATE: once) ─▶ check iss
//	            (RFC 9207, discovered servers) ─▶ exchange code + verifier
//	            ─▶ toolconfig.Authorized (token sealed, tool advances) ─▶ the
//	            tool's other states deleted
//
// A refresh (Refresh) holds a per-tool mutex in this process and the tool's
// refresh lease in the database (store.LockTool: a conditional UPDATE, no
// connection held while the provider answers); it re-reads the token under
// the lease and skips the provider when another caller already refreshed.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// CallbackPath is where providers redirect back to, under the public URL.
const CallbackPath = "/api/v1/oauth/callback"

// Defaults of Options.
const (
	DefaultStateTTL       = 10 * time.Minute
	DefaultRequestTimeout = 20 * time.Second
)

// Store is the persistence the flow needs.
type Store interface {
	GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	CreateOAuthState(ctx context.Context, st *store.OAuthState) error
	FreshOAuthState(ctx context.Context, accountID, toolID, toolVersion int64, stepIndex int, notBefore time.Time) (*store.OAuthState, error)
	ConsumeOAuthState(ctx context.Context, stateHash string, now time.Time) (*store.OAuthState, error)
	DeleteUnusedOAuthStates(ctx context.Context, toolID int64) error
	LockTool(ctx context.Context, accountID, id int64, fn func(t *store.Tool, save store.SaveToolFunc) error) error
}

var _ Store = (*store.Store)(nil)

// Client is the platform's OAuth application at one provider.
type Client struct {
	ID     string
	Secret string
}

// Endpoint overrides a provider's URLs (tests point them at a local
// provider) and how the client authenticates at its token endpoint
// (catalog.TokenAuthPost or TokenAuthBasic). Empty fields keep the
// catalog's.
type Endpoint struct {
	AuthURL       string
	TokenURL      string
	RevocationURL string
	TokenAuth     string
}

// Options configures a Flow.
type Options struct {
	Store Store
	Tools *toolconfig.Service
	Box   *secrets.Box
	// Clients maps a provider name (lower case) to the platform's client.
	Clients map[string]Client
	// Endpoints maps a provider name (lower case) to URL overrides.
	Endpoints map[string]Endpoint
	// PublicURL is where this server is reached; the redirect URI is
	// PublicURL + CallbackPath.
	PublicURL string
	// AllowPrivate lets provider and discovery requests reach loopback and
	// private addresses.
	AllowPrivate bool
	// HTTPClient makes every request to providers; nil means an
	// egress-guarded client.
	HTTPClient *http.Client
	// StateTTL is how long an authorization URL stays usable.
	StateTTL time.Duration
	Logger   *slog.Logger
	// Metrics counts refreshes and revocations (quiver_oauth_refreshes_total,
	// quiver_oauth_revocations_total); nil means metrics of its own.
	Metrics *metrics.Metrics
}

// Flow runs OAuth for connected tools. It is safe for concurrent use.
type Flow struct {
	opts  Options
	gates sync.Map // tool ID → *refreshGate: one refresh at a time per tool in this process
}

var (
	_ toolconfig.OAuthFlow      = (*Flow)(nil)
	_ toolconfig.TokenRefresher = (*Flow)(nil)
	_ toolconfig.Discoverer     = (*Flow)(nil)
	_ toolconfig.TokenRevoker   = (*Flow)(nil)
)

// New returns a Flow.
func New(opts Options) *Flow {
	if opts.StateTTL <= 0 {
		opts.StateTTL = DefaultStateTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{
			Transport:     egress.Transport(egress.Options{AllowPrivate: opts.AllowPrivate}),
			Timeout:       DefaultRequestTimeout,
			CheckRedirect: sendCredentialsOnce,
		}
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	return &Flow{opts: opts}
}

// sendCredentialsOnce is the providers' client's redirect policy: a GET (a
// metadata document) follows redirects as net/http does, while a POST to a
// token or registration endpoint carries a code, a refresh token or the
// client's secret, and a redirect (307 and 308 send the body again) would
// hand those to whatever the provider's answer names. Its answer is the
// redirect itself, which the caller takes for the failure it is.
func sendCredentialsOnce(req *http.Request, via []*http.Request) error {
	if via[0].Method != http.MethodGet {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// RedirectURL is the callback URL providers redirect to.
func (f *Flow) RedirectURL() string { return f.opts.PublicURL + CallbackPath }

// provider is everything needed to talk to one tool's provider.
type provider struct {
	name        string
	cfg         oauth2.Config
	authParams  []oauth2.AuthCodeOption
	tokenParams []oauth2.AuthCodeOption
	// resource is the RFC 8707 resource a discovered provider's tokens are
	// for, or "": every token request names it, a refresh's too.
	resource string
	// revocationURL is the provider's RFC 7009 revocation endpoint, or "".
	revocationURL string
}

// provider returns the OAuth provider of a tool: discovered for it, or its
// catalog entry's with the platform's client.
func (f *Flow) provider(t *store.Tool, e *catalog.Entry) (*provider, error) {
	if d, ok := toolconfig.Discovered(t); ok {
		secret := ""
		if d.ClientSecret != "" {
			b, err := f.opts.Box.Open(d.ClientSecret)
			if err != nil {
				return nil, errors.New("oauth: the discovered client secret cannot be opened")
			}
			secret = string(b)
		}
		style := oauth2.AuthStyleInHeader
		if d.AuthMethod == "client_secret_post" || d.AuthMethod == "none" {
			style = oauth2.AuthStyleInParams
		}
		p := &provider{name: d.Issuer, cfg: oauth2.Config{
			ClientID: d.ClientID, ClientSecret: secret, Scopes: d.Scopes, RedirectURL: f.RedirectURL(),
			Endpoint: oauth2.Endpoint{AuthURL: d.AuthorizationURL, TokenURL: d.TokenURL, AuthStyle: style},
		}, revocationURL: d.RevocationURL}
		resource, err := d.OpenResource(f.opts.Box)
		if err != nil {
			return nil, err
		}
		if resource != "" {
			// RFC 8707: name the resource the token is for.
			p.authParams = append(p.authParams, oauth2.SetAuthURLParam("resource", resource))
			p.tokenParams = append(p.tokenParams, oauth2.SetAuthURLParam("resource", resource))
			p.resource = resource
		}
		return p, nil
	}
	if e == nil || e.OAuth == nil {
		return nil, toolconfig.ErrProviderNotConfigured
	}
	name := strings.ToLower(e.OAuth.Provider)
	c, ok := f.opts.Clients[name]
	if !ok || c.ID == "" {
		return nil, toolconfig.ErrProviderNotConfigured
	}
	ep := oauth2.Endpoint{AuthURL: e.OAuth.AuthorizationURL, TokenURL: e.OAuth.TokenURL}
	tokenAuth, revocationURL := e.OAuth.TokenAuth, e.OAuth.RevocationURL
	if o, ok := f.opts.Endpoints[name]; ok {
		if o.AuthURL != "" {
			ep.AuthURL = o.AuthURL
		}
		if o.TokenURL != "" {
			ep.TokenURL = o.TokenURL
		}
		if o.RevocationURL != "" {
			revocationURL = o.RevocationURL
		}
		if o.TokenAuth != "" {
			tokenAuth = o.TokenAuth
		}
	}
	// Never oauth2's AutoDetect: it sends a failed token request again with
	// the credentials moved, and the first failure of every new Config
	// (one per request here) would present a refresh token twice.
	ep.AuthStyle = oauth2.AuthStyleInParams
	if tokenAuth == catalog.TokenAuthBasic {
		ep.AuthStyle = oauth2.AuthStyleInHeader
	}
	p := &provider{name: name, cfg: oauth2.Config{
		ClientID: c.ID, ClientSecret: c.Secret, Scopes: e.OAuth.Scopes, RedirectURL: f.RedirectURL(), Endpoint: ep,
	}, revocationURL: revocationURL}
	for k, v := range e.OAuth.ExtraAuthParams {
		p.authParams = append(p.authParams, oauth2.SetAuthURLParam(k, v))
	}
	return p, nil
}

// AuthorizationURL is the link that starts an authorization of t at its
// provider: bound to a single-use state of t and its account, expiring
// after StateTTL, with a PKCE (S256) verifier kept sealed beside it.
//
// A read of the tool shows the link of a state it showed before when one is
// still fresh (FreshOAuthState: unused, made for t's version and step, with
// at least half of StateTTL left), rebuilt from the state and verifier kept
// sealed with it, so the same state gives the same URL. Only when there is
// none does it store a new state. A client polling the tool while a person
// authorizes (as SDKs do) reads one row per poll instead of writing one, and
// the person gets the link the poll shows. Half the TTL is the rule because
// a link shown is followed at once or not at all: the person it was shown
// to has at least StateTTL/2 (five minutes by default) to sign in and
// consent, enough for a provider's login, while a link is handed out for
// at most StateTTL/2, so a tool polled throughout makes two states per TTL.
// A link shown once stays good for its whole TTL, though reads have
// moved on to a newer one.
func (f *Flow) AuthorizationURL(ctx context.Context, t *store.Tool, e *catalog.Entry, _ *catalog.Step) (string, error) {
	p, err := f.provider(t, e)
	if err != nil {
		return "", err
	}
	now := time.Now()
	state, verifier, err := f.freshState(ctx, t, now)
	if err != nil {
		return "", err
	}
	if state == "" {
		if state, err = randomState(); err != nil {
			return "", err
		}
		verifier = oauth2.GenerateVerifier()
		err = f.opts.Store.CreateOAuthState(ctx, &store.OAuthState{
			StateHash: hashState(state), AccountID: t.AccountID, ToolID: t.ID,
			Verifier: f.opts.Box.Seal([]byte(verifier)), SealedState: f.opts.Box.Seal([]byte(state)),
			ToolVersion: t.Version, StepIndex: t.StepIndex, CreatedAt: now, ExpiresAt: now.Add(f.opts.StateTTL),
		})
		if err != nil {
			return "", fmt.Errorf("oauth: store state: %w", err)
		}
	}
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, p.authParams...)
	return p.cfg.AuthCodeURL(state, opts...), nil
}

// freshState returns the state and verifier of t's state to show again
// (see AuthorizationURL), or "" when there is none. A state whose sealed
// parts cannot be opened (sealed with another key) or do not match its
// hash is not shown again.
func (f *Flow) freshState(ctx context.Context, t *store.Tool, now time.Time) (state, verifier string, err error) {
	st, err := f.opts.Store.FreshOAuthState(ctx, t.AccountID, t.ID, t.Version, t.StepIndex, now.Add(f.opts.StateTTL/2))
	if errors.Is(err, store.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("oauth: read state: %w", err)
	}
	s, err1 := f.opts.Box.Open(st.SealedState)
	v, err2 := f.opts.Box.Open(st.Verifier)
	if err1 != nil || err2 != nil || hashState(string(s)) != st.StateHash {
		return "", "", nil
	}
	return string(s), string(v), nil
}

func randomState() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashState is how a state is stored: a leaked table row cannot complete
// an authorization.
func hashState(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// clientCtx makes oauth2 use the flow's HTTP client.
func (f *Flow) clientCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, f.opts.HTTPClient)
}

// safeError describes a provider error without anything it may carry
// (a RetrieveError's body, a URL with a code in its query).
func safeError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" {
			code = "unknown_error"
		}
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return fmt.Sprintf("provider answered %s (HTTP %d)", sanitizeCode(code), status)
	}
	if errors.Is(err, errTokenType) {
		return "provider issued a token of a type other than bearer"
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return "provider timed out"
	}
	if egress.IsBlocked(err) {
		return "provider address is not allowed"
	}
	if egress.IsConnectFailure(err) {
		return "provider unreachable"
	}
	return "provider request failed"
}

// sanitizeCode keeps an OAuth error code to its RFC 6749 alphabet.
func sanitizeCode(code string) string {
	var b strings.Builder
	for _, r := range code {
		if r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
		if b.Len() >= 64 {
			break
		}
	}
	return b.String()
}

// toToken converts an oauth2 token to the stored form. A lifetime of 0 or
// less (expires_in 0, or negative: a token said to be dead on arrival) is
// no lifetime: the token is used until its server refuses it, and then
// refreshed. Taken as given, a negative one made every call refresh first,
// spending a rotating refresh token each time, and run with a token its
// provider had called expired.
func toToken(t *oauth2.Token) *toolconfig.Token {
	now := time.Now().UTC()
	expiry := t.Expiry.UTC()
	if !expiry.IsZero() && !expiry.After(now) {
		expiry = time.Time{}
	}
	return &toolconfig.Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType,
		Expiry: expiry, IssuedAt: now}
}

// errTokenType is an exchange's token of a type Quiver does not send.
var errTokenType = errors.New("oauth: the provider issued a token of a type other than bearer")

// providerTokenTypes are, for the catalog's providers whose token
// endpoints name their bearer tokens otherwise, those names: Slack's
// oauth.v2.user.access answers token_type "user" (and its bot flow "bot")
// for tokens it takes as bearer tokens.
var providerTokenTypes = map[string][]string{
	"slack": {"user", "bot"},
}

// checkTokenType is RFC 6749 §7.1 for a code exchange's token: a client
// must not use an access token of a type it does not understand, and
// Quiver sends every token as an RFC 6750 bearer token. Bearer (in any
// case: RFC 6749 §5.1), none (oauth2 and most clients take none for
// bearer) and p's own names of it pass; another type (mac, DPoP: tokens
// bound to a key Quiver never proved) is worthless or refused as a bearer
// token. A refresh's token is not checked: refused there, the rotated
// refresh token that came with it would be lost, and a server that does
// not take it as a bearer token answers 401, which is typed as ever.
func checkTokenType(p *provider, t *oauth2.Token) error {
	if t.TokenType == "" || strings.EqualFold(t.TokenType, "bearer") {
		return nil
	}
	for _, name := range providerTokenTypes[p.name] {
		if strings.EqualFold(t.TokenType, name) {
			return nil
		}
	}
	return errTokenType
}
