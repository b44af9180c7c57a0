package oauth

// Revocation (RFC 7009) of a disconnected tool's tokens. A tool deleted or
// reset lets go of its grant; the provider is told so the grant does not
// outlive it there:
//
//	Delete / Reset committed ─▶ (detached, toolconfig) RevokeTokens
//	  ─▶ POST revocation_endpoint token=<refresh>&token_type_hint=refresh_token
//	  ─▶ POST revocation_endpoint token=<access>&token_type_hint=access_token
//
// both with the client's authentication as at the token endpoint, within
// RevocationTimeout in all. The refresh token goes first: most servers end
// the access tokens issued from it with it. Nothing is retried and nothing
// is returned; a failure is a log line that names the tool and the
// provider's status or error code, never a token. Each token's request is
// counted in quiver_oauth_revocations_total.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// RevocationTimeout bounds the revocation of one tool's tokens, both
// requests together.
const RevocationTimeout = 10 * time.Second

// RevokeTokens revokes t's tokens at its provider; see
// toolconfig.TokenRevoker.
func (f *Flow) RevokeTokens(ctx context.Context, t *store.Tool) {
	if t == nil || t.OAuthToken == "" {
		return
	}
	var e *catalog.Entry
	if f.opts.Tools != nil {
		e, _ = f.opts.Tools.Catalog().Get(t.CatalogName)
	}
	p, err := f.provider(t, e)
	if err != nil || p.revocationURL == "" {
		return // no provider here any more, or one that takes no revocations
	}
	tok, err := toolconfig.OpenToken(f.opts.Box, t.OAuthToken)
	if err != nil {
		f.opts.Logger.WarnContext(ctx, "oauth token revocation skipped: the stored token cannot be opened", "tool", t.ID)
		f.opts.Metrics.OAuthRevocations.WithLabelValues("failed").Inc()
		return
	}
	f.revokePair(ctx, p, t.ID, tok.RefreshToken, tok.AccessToken)
}

// revokePair revokes a grant's refresh token, then its access token, at
// p, each that is not empty, within RevocationTimeout; what fails is
// logged.
func (f *Flow) revokePair(ctx context.Context, p *provider, toolID int64, refresh, access string) {
	ctx, cancel := context.WithTimeout(ctx, RevocationTimeout)
	defer cancel()
	for _, r := range []struct{ token, hint string }{
		{refresh, "refresh_token"},
		{access, "access_token"},
	} {
		if r.token == "" {
			continue
		}
		if err := f.revokeToken(ctx, p, r.token, r.hint); err != nil {
			f.opts.Logger.WarnContext(ctx, "oauth token revocation failed", "tool", toolID,
				"provider", p.name, "token_type_hint", r.hint, "error", err.Error())
			f.opts.Metrics.OAuthRevocations.WithLabelValues("failed").Inc()
			continue
		}
		f.opts.Metrics.OAuthRevocations.WithLabelValues("revoked").Inc()
		f.opts.Logger.InfoContext(ctx, "oauth token revoked at the provider", "tool", toolID,
			"provider", p.name, "token_type_hint", r.hint)
	}
}

// revokeToken sends one RFC 7009 revocation request. Its error says what the
// provider answered, without the token or anything it echoed.
func (f *Flow) revokeToken(ctx context.Context, p *provider, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	id, secret := p.cfg.ClientID, p.cfg.ClientSecret
	basic := p.cfg.Endpoint.AuthStyle == oauth2.AuthStyleInHeader && secret != ""
	if !basic {
		form.Set("client_id", id)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.revocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return errors.New("the revocation endpoint is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// As oauth2 does at the token endpoint (RFC 6749 §2.3.1).
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := f.opts.HTTPClient.Do(req)
	if err != nil {
		return errors.New(safeError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
		// RFC 7009 §2.2 answers 200; several servers answer 204, no less
		// revoked.
		return nil
	}
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(&body)
	if code := sanitizeCode(body.Error); code != "" {
		return fmt.Errorf("provider answered %s (HTTP %d)", code, resp.StatusCode)
	}
	return fmt.Errorf("provider answered HTTP %d", resp.StatusCode)
}
