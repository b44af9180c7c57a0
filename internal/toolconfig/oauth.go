package toolconfig

// OAuth tokens of connected tools: how they are stored, how a call gets a
// fresh one, and the two state changes the OAuth flow causes (authorized,
// credentials revoked). The flow itself (providers, states, the exchange,
// the refresh at the provider) lives in internal/oauth behind the
// interfaces below; this file decides what the tool's state becomes.
//
//	Resolve ──▶ token due for a refresh (RefreshAt)? ──no──▶ use it
//	                      │ yes
//	                      ▼
//	        TokenRefresher.Refresh (single flight, refresh lease)
//	                      │
//	       ok ◀───────────┴──────────▶ ErrGrantRevoked: the tool is back at
//	  (new token, version+1)  │           its oauth step → tool_not_configured
//	                          │
//	                          ├──▶ ErrClientRejected (our client is refused):
//	                          │    upstream_auth_failed, the tool unchanged
//	                          └──▶ other failure (may be transient):
//	                               tool_unreachable, "retry shortly"
//
// A refresh that fails without killing the grant (the last two) still lets
// a call use an access token that lives at least MinTokenLife more.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// TokenLeeway is how close to its expiry an access token is refreshed
// before a call uses it; a token that lives less than twice as long is
// refreshed halfway through its life instead (Token.RefreshAt).
const TokenLeeway = 60 * time.Second

// Token is a tool's OAuth grant as stored (sealed) in store.Tool.OAuthToken.
// Its String method hides the values, so a stray log line shows nothing.
type Token struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// IssuedAt is when this server received the token.
	IssuedAt time.Time `json:"issued_at,omitzero"`
}

func (t *Token) String() string { return "oauth token (redacted)" }

// LogValue keeps the token out of structured logs (slog.LogValuer): the
// JSON handler the server logs with would otherwise marshal it whole.
func (t *Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// Expiring reports whether the access token is due for a refresh at now
// (RefreshAt). A token without an expiry never is.
func (t *Token) Expiring(now time.Time) bool {
	at := t.RefreshAt()
	return !at.IsZero() && now.After(at)
}

// RefreshAt is when the access token is due for a refresh: TokenLeeway
// before its expiry, or halfway through its life when it lives less than
// twice TokenLeeway (a token issued for 30 s is used for 15, not refreshed
// before every call). Zero means never: the token has no expiry.
func (t *Token) RefreshAt() time.Time {
	if t.Expiry.IsZero() {
		return time.Time{}
	}
	leeway := TokenLeeway
	if !t.IssuedAt.IsZero() {
		if life := t.Expiry.Sub(t.IssuedAt); life < 2*TokenLeeway {
			leeway = max(life/2, 0)
		}
	}
	return t.Expiry.Add(-leeway)
}

// SealToken encrypts a token for store.Tool.OAuthToken.
func SealToken(box *secrets.Box, t *Token) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	return box.Seal(b), nil
}

// OpenToken decrypts store.Tool.OAuthToken.
func OpenToken(box *secrets.Box, sealed string) (*Token, error) {
	pt, err := box.Open(sealed)
	if err != nil {
		return nil, errors.New("toolconfig: the stored OAuth token cannot be opened")
	}
	var t Token
	if err := json.Unmarshal(pt, &t); err != nil {
		return nil, errors.New("toolconfig: the stored OAuth token is not valid")
	}
	return &t, nil
}

// ErrGrantRevoked is returned by a TokenRefresher when the provider refused
// the refresh token for good: the tool was put back at its oauth step.
var ErrGrantRevoked = errors.New("toolconfig: the OAuth grant was revoked")

// ErrClientRejected is returned by a TokenRefresher when the provider
// refused this server's own OAuth client at its token endpoint
// (invalid_client: a wrong, expired or revoked client ID or secret). No
// retry and no new authorization heals that, only fixing the client; the
// grant may be fine, so the tool keeps it.
var ErrClientRejected = errors.New("toolconfig: the OAuth provider refused this server's client credentials")

// TokenRefresher is implemented by an OAuthFlow that refreshes tokens.
type TokenRefresher interface {
	// Refresh makes sure the account's tool id holds a usable token and
	// returns the row as stored afterwards. It refreshes at the provider
	// only when, read under the refresh lock, the stored access token is
	// due for a refresh (Token.Expiring) or (stale non-empty) is still stale, the
	// token a server just refused; otherwise another call already did it.
	// When the provider refuses the grant for good it stores the tool back
	// at its oauth step and returns that row with ErrGrantRevoked; when it
	// refuses the client itself, ErrClientRejected and no change. A stale
	// token that RefusedFresh named moments ago gets ErrRefusedAgain, and
	// no refresh.
	Refresh(ctx context.Context, accountID, id int64, stale string) (*store.Tool, error)
	// RefusedFresh records that a tool's server refused token, which a
	// refresh had just made because the server refused the one before.
	RefusedFresh(id int64, token string)
}

// ErrRefusedAgain is a refresh asked for a token that the tool's server
// refused right after a refresh made it (RefusedFresh): the server refuses
// more than a stale token (a grant without the scope it wants, say), and a
// refresh on every call would only hammer the provider and spend rotating
// refresh tokens.
var ErrRefusedAgain = errors.New("toolconfig: the tool's server refuses even a freshly refreshed token")

// Discoverer is implemented by an OAuthFlow that can find an oauth step
// from a server's refusal (an MCP server pointing at its OAuth
// protected-resource metadata).
type Discoverer interface {
	// Discover returns the OAuth provider a verify error points at; ok is
	// false when err is not such a refusal. serverURL is the tool's url.
	Discover(ctx context.Context, verifyErr error, serverURL string) (d *DiscoveredOAuth, ok bool, err error)
}

// TokenRevoker is implemented by an OAuthFlow that revokes a tool's tokens
// at its provider (RFC 7009) when the tool lets go of them.
type TokenRevoker interface {
	// RevokeTokens revokes at the provider of t, a tool as it was when
	// it was deleted or reset, the tokens it held: its refresh
	// token, then its access token. It is best effort and bounded in
	// time: what fails is logged, never returned, and a provider without
	// a revocation endpoint is sent nothing.
	RevokeTokens(ctx context.Context, t *store.Tool)
}

// revokeDetached revokes the tokens of t, a tool as it was before a change
// that dropped them and has just been committed, detached from the
// request: the request neither waits for the provider nor can be failed
// by it, and the revocation is not cut short when the client goes. The
// context keeps the request's values, so its log lines carry its ID.
func (s *Service) revokeDetached(ctx context.Context, t *store.Tool) {
	r, ok := s.opts.OAuth.(TokenRevoker)
	if !ok || t == nil || t.OAuthToken == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	s.revocations.Add(1)
	s.revoking.Go(func() {
		defer s.revocations.Add(-1)
		r.RevokeTokens(ctx, t)
	})
}

// Revoking is how many tools' revocations that Delete and Reset started
// are still under way.
func (s *Service) Revoking() int { return int(s.revocations.Load()) }

// WaitRevocations waits until the revocations that Delete and Reset
// started have ended (each is bounded by the flow's own timeout).
func (s *Service) WaitRevocations() { s.revoking.Wait() }

// attachToken fills r's access token from the stored grant.
func (s *Service) attachToken(r *Resolved) error {
	if r.Row.OAuthToken == "" {
		return nil
	}
	tok, err := OpenToken(s.opts.Box, r.Row.OAuthToken)
	if err != nil {
		return fmt.Errorf("toolconfig: tool %d: %w", r.Row.ID, err)
	}
	r.Tool.AccessToken, r.refreshAt, r.expiry = tok.AccessToken, tok.RefreshAt(), tok.Expiry
	return nil
}

// fresh returns r, or r with a refreshed token when its token is about to
// expire.
func (s *Service) fresh(ctx context.Context, r *Resolved) (*Resolved, error) {
	if !r.refreshDue(s.opts.Now()) {
		return r, nil
	}
	return s.refresh(ctx, r, "")
}

// MinTokenLife is how long an access token a refresh could not replace
// must still live to be used: a call's request reaches its server well
// within it.
const MinTokenLife = 2 * time.Second

// usable reports whether r's access token lives at least MinTokenLife
// more after now.
func (r *Resolved) usable(now time.Time) bool {
	return !r.expiry.IsZero() && r.expiry.Sub(now) >= MinTokenLife
}

// refreshDue reports whether r's access token is due for a refresh at now.
func (r *Resolved) refreshDue(now time.Time) bool {
	return r.Row.OAuthToken != "" && !r.refreshAt.IsZero() && now.After(r.refreshAt)
}

// Reauthorize answers a server's refusal of r's access token (HTTP 401):
// one refresh, shared with every concurrent caller and skipped when another
// call refreshed since r's token was issued. It returns nil, nil when the
// tool has no OAuth grant to refresh, or when the server refused this very
// token right after a refresh made it (RefusedFresh, ErrRefusedAgain): the
// caller then answers the server's refusal. It returns a *problem.Error
// tool_not_configured when the grant is dead.
func (s *Service) Reauthorize(ctx context.Context, r *Resolved) (*Resolved, error) {
	if r == nil || r.Row == nil || r.Row.OAuthToken == "" || r.Tool.AccessToken == "" {
		return nil, nil
	}
	if _, ok := s.opts.OAuth.(TokenRefresher); !ok {
		return nil, nil
	}
	return s.refresh(ctx, r, r.Tool.AccessToken)
}

// RefusedFresh tells the refresher that the server refused r's token on
// the retry right after Reauthorize refreshed it: its next refusals, for a
// while, get no refresh (ErrRefusedAgain).
func (s *Service) RefusedFresh(r *Resolved) {
	if ref, ok := s.opts.OAuth.(TokenRefresher); ok && r != nil && r.Row != nil && r.Tool.AccessToken != "" {
		ref.RefusedFresh(r.Row.ID, r.Tool.AccessToken)
	}
}

func (s *Service) refresh(ctx context.Context, r *Resolved, stale string) (*Resolved, error) {
	ref, ok := s.opts.OAuth.(TokenRefresher)
	if !ok {
		return r, nil
	}
	since := s.epoch.Load()
	row, err := ref.Refresh(ctx, r.Row.AccountID, r.Row.ID, stale)
	if errors.Is(err, ErrRefusedAgain) {
		return nil, nil
	}
	s.invalidate(r.Row.AccountID, r.Row.ID)
	switch {
	case errors.Is(err, ErrGrantRevoked) && row != nil:
		return nil, s.notConfigured(ctx, row, r.Entry)
	case errors.Is(err, store.ErrNotFound):
		return nil, notFound(r.Row.ID)
	case errors.Is(err, store.ErrUnavailable):
		return nil, err
	case errors.Is(err, store.ErrConflict):
		return s.overtaken(ctx, r)
	case err != nil:
		// A token refreshed ahead of its expiry (stale empty) is still good
		// until then: the call uses it, and the next call due asks again.
		if now := s.opts.Now(); stale == "" && r.usable(now) && !errors.Is(err, ErrGrantRevoked) {
			s.opts.Logger.WarnContext(ctx, "oauth token refresh failed; the access token is used until it expires",
				"tool", r.Row.ID, "expires_in", r.expiry.Sub(now).Round(time.Second).String(), "error", err)
			return r, nil
		}
		s.opts.Logger.WarnContext(ctx, "oauth token refresh failed", "tool", r.Row.ID, "error", err)
		if errors.Is(err, ErrClientRejected) {
			return nil, clientRejected(r.Row)
		}
		if errors.Is(err, ErrProviderNotConfigured) {
			return nil, providerUnset(r.Entry)
		}
		return nil, problem.New(problem.ToolUnreachable,
			"The tool's OAuth provider could not refresh its access token; nothing was sent to the tool. Retry shortly.")
	}
	if State(row.State) != Configured {
		return nil, s.notConfigured(ctx, row, r.Entry)
	}
	out := &Resolved{Entry: r.Entry, Connector: r.Connector, Row: row}
	tool := *r.Tool
	tool.Version = row.Version
	out.Tool = &tool
	if err := s.attachToken(out); err != nil {
		return nil, err
	}
	s.remember(out, since+1) // this refresh's own invalidation is counted
	return out, nil
}

// clientRejected is the answer to a refresh the provider refused because
// it refuses this server's OAuth client (ErrClientRejected): 502
// upstream_auth_failed, since the provider rejected our credentials before
// anything ran, with a message that says a retry will not help. A client
// registered for the tool (discovered) is registered again by resetting
// the tool; the platform's client is the operator's to fix.
func clientRejected(t *store.Tool) *problem.Error {
	if _, ok := Discovered(t); ok {
		return problem.New(problem.UpstreamAuthFailed,
			"The tool's OAuth provider refuses the client Quiver registered there (invalid_client), so its access token cannot be refreshed; nothing was sent to the tool. Retrying will not help: reset the tool's configuration to register again.")
	}
	return problem.New(problem.UpstreamAuthFailed,
		"The tool's OAuth provider refuses this server's OAuth client credentials (invalid_client), so its access token cannot be refreshed; nothing was sent to the tool. Retrying will not help until the server's operator fixes the client ID or secret.")
}

// providerUnset is the answer to a refresh of a tool whose catalog
// provider has no client on this server any more (ErrProviderNotConfigured):
// the grant is kept, since setting the client again heals it, but no retry
// does until then.
func providerUnset(e *catalog.Entry) *problem.Error {
	name := ""
	if e != nil && e.OAuth != nil {
		name = e.OAuth.Provider
	}
	return problem.New(problem.ToolUnreachable,
		"The tool's OAuth provider %s is not set up on this server, so its access token cannot be refreshed; nothing was sent to the tool. Retrying will not help until the server's operator sets %s.", name, clientVars(name))
}

// clientVars names the variables that set provider's OAuth client.
func clientVars(provider string) string {
	p := strings.ToUpper(provider)
	return "QUIVER_OAUTH_" + p + "_CLIENT_ID and QUIVER_OAUTH_" + p + "_CLIENT_SECRET"
}

// overtaken answers a call whose token refresh could not be saved because
// the tool changed meanwhile: a refresh holds the tool's refresh lease, not
// its row, so the tool can be deleted, reset or reconfigured while the
// provider answers. The provider
// did its part, so the call answers for the tool as it is now: gone (404),
// waiting at a step (tool_not_configured), or configured anew with a token
// that is not due, which the call then uses.
func (s *Service) overtaken(ctx context.Context, r *Resolved) (*Resolved, error) {
	s.opts.Logger.InfoContext(ctx, "oauth token refresh overtaken: the tool changed meanwhile", "tool", r.Row.ID)
	now, err := s.load(ctx, r.Row.AccountID, r.Row.ID)
	if err != nil {
		return nil, err
	}
	if now.refreshDue(s.opts.Now()) {
		return nil, problem.New(problem.ToolUnreachable,
			"The tool changed while its OAuth access token was being refreshed; nothing was sent to the tool. Retry shortly.")
	}
	return now, nil
}

// notConfigured is the tool_not_configured answer for a tool at a step.
func (s *Service) notConfigured(ctx context.Context, t *store.Tool, e *catalog.Entry) *problem.Error {
	p := problem.New(problem.ToolNotConfigured, "Tool %d needs to be connected again: its OAuth authorization was revoked or expired.", t.ID)
	p.Extra = map[string]any{"next_configuration_step": s.stepView(ctx, t, e)}
	p.Err = unconfiguredCause(t, e)
	return p
}

// Authorized records a successful OAuth exchange for the account's tool,
// which must be waiting at an oauth step at version, as the callback read
// it before the exchange: it stores the sealed token and advances the tool
// (EventAuthorized). A tool that moved on meanwhile (reset, deleted,
// authorized by another callback) is ErrConflict or ErrNotFound.
func (s *Service) Authorized(ctx context.Context, accountID, id, version int64, tok *Token) (*View, error) {
	t, e, err := s.get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	steps := s.toolSteps(t, e)
	if t.Version != version || State(t.State) != AwaitingAuthorization || t.StepIndex >= len(steps) || steps[t.StepIndex].Type != catalog.StepOAuth {
		return nil, store.ErrConflict
	}
	var next *catalog.Step
	if t.StepIndex+1 < len(steps) {
		next = &steps[t.StepIndex+1]
	}
	to, err := Transition(State(t.State), EventAuthorized, next)
	if err != nil {
		return nil, err
	}
	if tok.IssuedAt.IsZero() {
		tok.IssuedAt = time.Now().UTC()
	}
	sealed, err := SealToken(s.opts.Box, tok)
	if err != nil {
		return nil, err
	}
	from, version := t.State, t.Version
	t.State, t.StepIndex, t.OAuthToken = string(to), t.StepIndex+1, sealed
	if to == Configured {
		t.StepIndex = len(steps)
	}
	err = s.opts.Store.UpdateToolConfig(ctx, t, from, version)
	s.invalidate(accountID, id)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, t, e)
}

// Revoke puts t (as read under the refresh lock) back at its oauth step
// with no token (EventCredentialsRevoked). It changes t only; the caller
// saves it.
func (s *Service) Revoke(t *store.Tool) error {
	e, ok := s.opts.Catalog.Get(t.CatalogName)
	if !ok {
		return fmt.Errorf("toolconfig: tool %d names unknown catalog entry %q", t.ID, t.CatalogName)
	}
	steps := s.toolSteps(t, e)
	idx := -1
	for i := range steps {
		if steps[i].Type == catalog.StepOAuth {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("toolconfig: tool %d has no oauth step", t.ID)
	}
	to, err := Transition(State(t.State), EventCredentialsRevoked, &steps[idx])
	if err != nil {
		return err
	}
	t.State, t.StepIndex, t.OAuthToken = string(to), idx, ""
	return nil
}

// Entry returns the catalog entry and the steps of a stored tool, with a
// discovered oauth step included.
func (s *Service) Entry(t *store.Tool) (*catalog.Entry, []catalog.Step, error) {
	e, ok := s.opts.Catalog.Get(t.CatalogName)
	if !ok {
		return nil, nil, fmt.Errorf("toolconfig: tool %d names unknown catalog entry %q", t.ID, t.CatalogName)
	}
	return e, s.toolSteps(t, e), nil
}
