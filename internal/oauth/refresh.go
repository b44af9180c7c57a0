package oauth

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// Refresh makes sure the tool holds a usable token; see
// toolconfig.TokenRefresher.
//
// Exactly one refresh per expiry, however many calls and replicas want one:
//
//	process mutex (per tool) ─▶ the tool's refresh lease (store.LockTool:
//	  claimed with a conditional UPDATE; another replica's live lease is
//	  waited out by polling) ─▶ re-read the token: fresh, or not the stale
//	  one? use it, done ─▶ refresh at the provider, no database connection
//	  held ─▶ save the new tokens (rotated refresh token included) before
//	  anyone uses them, if the lease is still ours and the tool at the
//	  version read ─▶ the lease is freed
//
// Rotating refresh tokens die once used, so two refreshes with one refresh
// token would leave the loser with invalid_grant and a dead connection; the
// lease makes the second caller read the first one's result instead. A
// refused grant (grantRefused: invalid_grant, invalid_scope,
// unauthorized_client, unsupported_grant_type, or a catalog provider's own
// code for one of them: providerCodes) is judged only against the
// token read under the lease (and read under it once more, refusedGrant),
// so a refresh another replica completed is never taken for a revoked
// grant. invalid_client is ErrClientRejected: the grant is kept, since
// fixing the client heals it.
func (f *Flow) Refresh(ctx context.Context, accountID, id int64, stale string) (*store.Tool, error) {
	began := time.Now()
	g := f.gate(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	if stale != "" && stale == g.refusedFresh && time.Since(g.refusedAt) < RefusedAgainWait {
		// The server refused this token right after a refresh made it: it
		// refuses more than a stale token, and a refresh per call would
		// only hammer the provider. The caller answers the refusal.
		if !g.told {
			g.told = true
			f.opts.Logger.WarnContext(ctx, "oauth: the tool's server refuses even a freshly refreshed token; not refreshing again for a while",
				"tool", id, "wait", RefusedAgainWait)
		}
		return nil, toolconfig.ErrRefusedAgain
	}
	if g.failedAt.After(began) {
		// A refresh failed at the provider while this caller waited for
		// it: asking again at once would make every waiting call wait out
		// the provider in turn. The waiters share that answer; a call
		// that comes later tries again.
		return nil, g.failedErr
	}
	// The refresh must finish once started, even if this caller leaves: a
	// rotated refresh token that was spent and not stored is a dead grant.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout+5*time.Second)
	defer cancel()

	var out *store.Tool
	var refused *refusal // the provider refused the grant (errGrantRefused)
	// issued is what issuer issued to a refresh whose save found the tool
	// changed meanwhile (store.ErrConflict).
	var issued *toolconfig.Token
	var issuer *provider
	revoked := false
	// result is the refresh's quiver_oauth_refreshes_total result, counted
	// once the lease is let go; "" counts nothing (no refresh was due, or it
	// failed before the provider was asked).
	result := ""
	err := f.opts.Store.LockTool(ctx, accountID, id, func(t *store.Tool, save store.SaveToolFunc) error {
		out = t
		if t.OAuthToken == "" || toolconfig.State(t.State) != toolconfig.Configured {
			return nil // not connected: the caller reports the tool's step
		}
		tok, err := toolconfig.OpenToken(f.opts.Box, t.OAuthToken)
		if err != nil {
			return err
		}
		switch {
		case stale != "" && tok.AccessToken != stale:
			return nil // another call refreshed since the refused token was issued
		case stale == "" && !tok.Expiring(time.Now()):
			return nil // another call refreshed while this one waited
		case tok.RefreshToken == "":
			if stale == "" && time.Now().Before(tok.Expiry) {
				return nil // about to expire and cannot be refreshed: use it while it lasts
			}
			revoked, result = true, "unrefreshable"
			return f.revoke(t, save)
		}
		e, _, err := f.opts.Tools.Entry(t)
		if err != nil {
			return err
		}
		p, err := f.provider(t, e)
		if err != nil {
			return err
		}
		nt, err := p.cfg.TokenSource(f.refreshCtx(ctx, p), &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			said, code := "", ""
			if errors.As(err, &re) {
				said = re.ErrorCode
				code = standardCode(p.name, said)
			}
			switch {
			case code == "invalid_client":
				// Our own client is refused: an operator's problem that no
				// retry and no new authorization heals. The grant may be
				// fine, so it is kept.
				f.opts.Logger.ErrorContext(ctx, "oauth refresh: the provider refuses this server's OAuth client (invalid_client); check its client ID and secret",
					"tool", id, "provider", p.name, "error", safeError(err))
				result = "client_rejected"
				return toolconfig.ErrClientRejected
			case !grantRefused(code):
				f.opts.Logger.WarnContext(ctx, "oauth refresh failed", "tool", id, "provider", p.name, "error", safeError(err))
				result = "failed"
				return errRefreshFailed
			}
			// The grant is called dead below, under a lease taken again
			// (refusedGrant): nothing was written, so this one lets go.
			refused = &refusal{token: t.OAuthToken, provider: p.name, code: sanitizeCode(said)}
			return errGrantRefused
		}
		// Issued, but counted refreshed only once stored: a token the
		// provider issued and this server lost is a failed refresh.
		result = "failed"
		next := toToken(nt)
		if next.RefreshToken == "" {
			next.RefreshToken = tok.RefreshToken // the provider does not rotate
		}
		sealed, err := toolconfig.SealToken(f.opts.Box, next)
		if err != nil {
			return err
		}
		t.OAuthToken = sealed
		if err := save(t); err != nil {
			if errors.Is(err, store.ErrConflict) {
				issued, issuer = next, p // overtaken: see below
			}
			return err
		}
		f.opts.Logger.InfoContext(ctx, "oauth token refreshed", "tool", id, "provider", p.name, "version", t.Version)
		result = "refreshed"
		return nil
	})
	if issued != nil {
		// Overtaken by a delete or a reset (neither waits for the
		// refresh lease): the tokens just issued are stored nowhere, and the
		// change revoked only the ones it read, a spent refresh token
		// among them. They are revoked as a callback overtaken the same
		// way revokes its grant, not left live at the provider.
		f.revokeUnkept(ctx, issuer, accountID, id, false, issued.RefreshToken, issued.AccessToken)
	}
	if errors.Is(err, errGrantRefused) {
		out, revoked, err = f.refusedGrant(ctx, accountID, id, refused)
		if revoked {
			result = "refused"
		}
	}
	if err != nil && (result == "refreshed" || revoked) {
		// Stored, then not committed; or the tool's return to its oauth
		// step not saved: it is as it was, its token kept.
		result = "failed"
	}
	if result != "" {
		f.opts.Metrics.OAuthRefreshes.WithLabelValues(result).Inc()
	}
	if errors.Is(err, errRefreshFailed) || errors.Is(err, toolconfig.ErrClientRejected) {
		g.failedAt, g.failedErr = time.Now(), err
	}
	if err != nil {
		return nil, err
	}
	if revoked {
		return out, toolconfig.ErrGrantRevoked
	}
	return out, nil
}

// errGrantRefused ends the locked part of a refresh the provider refused
// for good (grantRefused), with nothing written: refusedGrant decides.
var errGrantRefused = errors.New("oauth: the provider refused the grant")

// refusal is a refresh's refused grant: the sealed token it was refused
// for, and what the provider said.
type refusal struct {
	token, provider, code string
}

// refusedGrant stores the tool back at its oauth step after the provider
// refused r's grant, if the tool, read under the refresh lease again, still
// holds that grant; if not, another process refreshed or the tool changed
// meanwhile, and the row as it is now is the answer.
func (f *Flow) refusedGrant(ctx context.Context, accountID, id int64, r *refusal) (out *store.Tool, revoked bool, err error) {
	err = f.opts.Store.LockTool(ctx, accountID, id, func(t *store.Tool, save store.SaveToolFunc) error {
		out = t
		if t.OAuthToken != r.token || toolconfig.State(t.State) != toolconfig.Configured {
			return nil
		}
		f.opts.Logger.WarnContext(ctx, "oauth grant refused: the tool must be connected again", "tool", id, "provider", r.provider, "error", r.code)
		revoked = true
		return f.revoke(t, save)
	})
	return out, revoked, err
}

// errRefreshFailed is a refresh that failed for a reason other than a
// refused grant (the provider was down, timed out): the grant may be fine.
var errRefreshFailed = errors.New("oauth: the provider could not refresh the token")

// grantRefused reports whether a token endpoint's error code (RFC 6749
// §5.2) to a refresh says this grant can never be refreshed, so that only
// a new authorization helps: invalid_grant (the refresh token is revoked,
// expired or spent), invalid_scope (the grant no longer covers its scope),
// unauthorized_client (this client may not refresh this grant) and
// unsupported_grant_type (the server refreshes no grant now: only a new
// authorization gets a token). invalid_client is the client's own problem
// (ErrClientRejected); any other answer may be transient, invalid_request
// included (a fault on the way, not a verdict on the grant).
func grantRefused(code string) bool {
	switch code {
	case "invalid_grant", "invalid_scope", "unauthorized_client", "unsupported_grant_type":
		return true
	}
	return false
}

// providerCodes maps, for the catalog's providers whose token endpoints
// answer a refresh with error codes of their own rather than RFC 6749
// §5.2's, each such code to the standard one it means. Without them a dead
// grant or a refused client is taken for a passing failure, and the tool
// answers "retry shortly" forever instead of going back to its oauth step.
//
//   - github: bad_refresh_token (the refresh token is spent, expired or
//     revoked) and incorrect_client_credentials, both with HTTP 200.
//   - slack (oauth.v2.user.access): invalid_refresh_token and
//     token_revoked (the user, workspace or app is gone), bad_client_secret
//     and invalid_client_id, each with HTTP 200 and "ok": false.
//
// A discovered provider (named by its issuer) speaks RFC 6749 and gets
// none of these.
var providerCodes = map[string]map[string]string{
	"github": {
		"bad_refresh_token":            "invalid_grant",
		"incorrect_client_credentials": "invalid_client",
	},
	"slack": {
		"invalid_refresh_token": "invalid_grant",
		"token_revoked":         "invalid_grant",
		"bad_client_secret":     "invalid_client",
		"invalid_client_id":     "invalid_client",
	},
}

// standardCode is the RFC 6749 error code that provider means by code.
func standardCode(provider, code string) string {
	if c, ok := providerCodes[provider][code]; ok {
		return c
	}
	return code
}

// revoke stores t back at its oauth step, without a token.
func (f *Flow) revoke(t *store.Tool, save store.SaveToolFunc) error {
	if err := f.opts.Tools.Revoke(t); err != nil {
		return err
	}
	return save(t)
}

// RefusedAgainWait is how long a token the tool's server refused on the
// retry right after the refresh that made it (RefusedFresh) gets no
// refresh when refused again (toolconfig.ErrRefusedAgain), in this
// process. Only such a token is marked: one the server took on that retry
// is refreshed on a later refusal as ever (a revoked grant is found at
// once), and so is any token that expires.
const RefusedAgainWait = 30 * time.Second

// RefusedFresh marks token, which a refresh just made, as refused by the
// tool's server: see toolconfig.TokenRefresher.
func (f *Flow) RefusedFresh(id int64, token string) {
	g := f.gate(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refusedFresh, g.refusedAt, g.told = token, time.Now(), false
}

// refreshGate lets one refresh of a tool run at a time in this process.
// Its fields are under mu.
type refreshGate struct {
	mu        sync.Mutex
	failedAt  time.Time // when a refresh last failed at the provider
	failedErr error     // and how: errRefreshFailed or toolconfig.ErrClientRejected
	// refusedFresh is the token RefusedFresh last marked, at refusedAt;
	// told is set once a refusal of it was logged.
	refusedFresh string
	refusedAt    time.Time
	told         bool
}

func (f *Flow) gate(id int64) *refreshGate {
	g, _ := f.gates.LoadOrStore(id, &refreshGate{})
	return g.(*refreshGate)
}
