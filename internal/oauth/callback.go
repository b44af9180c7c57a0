package oauth

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// Outcome is what a callback came to, shown to the person in the browser.
type Outcome struct {
	Status  int
	OK      bool
	Reason  string // a stable word for tests and logs: connected, denied, expired_state, …
	Title   string
	Message string
	ToolID  int64
}

// Callback completes an authorization from the provider's redirect. It
// never needs an API key: the state binds the request to one tool of one
// account, and it works once, before its expiry.
func (f *Flow) Callback(ctx context.Context, q url.Values) *Outcome {
	state := q.Get("state")
	if state == "" {
		return &Outcome{Status: http.StatusBadRequest, Reason: "missing_state", Title: "This link is incomplete",
			Message: "The provider's answer carries no state, so it cannot be matched to a tool. Start the connection again from Quiver."}
	}
	for _, name := range []string{"state", "code", "error", "iss"} {
		if len(q[name]) > 1 {
			// RFC 6749 §3.1: never the provider's own answer, which
			// names each once; one of them was put there on the way. The
			// state is left unspent for the answer itself.
			return &Outcome{Status: http.StatusBadRequest, Reason: "duplicate_parameter", Title: "This link is not valid",
				Message: "The provider's answer names its " + name + " more than once, so Quiver did not use it. If the tool is not connected, start the connection again from Quiver."}
		}
	}
	st, err := f.opts.Store.ConsumeOAuthState(ctx, hashState(state), time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &Outcome{Status: http.StatusBadRequest, Reason: "unknown_state", Title: "This link is not valid",
			Message: "This authorization was not started by Quiver, or its tool was connected through another link, reset or removed since. If the tool is not connected, start the connection again from Quiver."}
	case errors.Is(err, store.ErrStateUsed):
		return &Outcome{Status: http.StatusBadRequest, Reason: "replayed_state", Title: "This link was already used",
			Message: "Each authorization link works once. If the tool is not connected yet, start the connection again from Quiver."}
	case errors.Is(err, store.ErrStateExpired):
		return &Outcome{Status: http.StatusBadRequest, Reason: "expired_state", Title: "This link has expired",
			Message: "The authorization took too long. Start the connection again from Quiver to get a fresh link."}
	case err != nil:
		f.opts.Logger.ErrorContext(ctx, "oauth callback: reading the state failed", "error", err)
		return &Outcome{Status: http.StatusServiceUnavailable, Reason: "unavailable", Title: "Something went wrong",
			Message: "Quiver could not complete the connection right now. Try again in a moment."}
	}
	out := func(o *Outcome) *Outcome {
		o.ToolID = st.ToolID
		f.opts.Logger.InfoContext(ctx, "oauth callback", "tool", st.ToolID, "outcome", o.Reason)
		return o
	}
	if e := q.Get("error"); e != "" {
		// RFC 9207 §2.4: an error response's iss is checked as a
		// success's is. One from another server (a mix-up) is not this
		// tool's server's verdict, and is told as what it is.
		if t, err := f.opts.Store.GetTool(ctx, st.AccountID, st.ToolID); err == nil {
			if o := f.issuerRefused(ctx, t, q); o != nil {
				return out(o)
			}
		}
		if e == "access_denied" {
			return out(&Outcome{Status: http.StatusForbidden, Reason: "denied", Title: "Authorization was declined",
				Message: "The tool was not connected, because the authorization was declined at the provider. You can start again from Quiver at any time."})
		}
		code := sanitizeCode(e)
		if code == "" {
			code = "unknown_error" // nothing of it is RFC 6749's alphabet
		}
		return out(&Outcome{Status: http.StatusBadGateway, Reason: "provider_error", Title: "The provider reported an error",
			Message: "The provider answered with the error " + code + ", so the tool was not connected. Start the connection again from Quiver."})
	}
	code := q.Get("code")
	if code == "" {
		return out(&Outcome{Status: http.StatusBadRequest, Reason: "missing_code", Title: "This link is incomplete",
			Message: "The provider's answer carries no authorization code. Start the connection again from Quiver."})
	}
	t, err := f.opts.Store.GetTool(ctx, st.AccountID, st.ToolID)
	if errors.Is(err, store.ErrNotFound) {
		return out(&Outcome{Status: http.StatusNotFound, Reason: "tool_gone", Title: "The tool is gone",
			Message: "The tool this authorization was for no longer exists."})
	}
	if err != nil {
		// The state is spent: the same link would be told so.
		f.opts.Logger.ErrorContext(ctx, "oauth callback: reading the tool failed", "tool", st.ToolID, "error", err)
		return out(&Outcome{Status: http.StatusServiceUnavailable, Reason: "unavailable", Title: "Something went wrong",
			Message: "Quiver could not complete the connection right now. Start it again from Quiver in a moment."})
	}
	if st.ToolVersion != 0 && st.ToolVersion != t.Version {
		// A link of the configuration before a reset or another change:
		// its state outlived the change's purge only by racing it (a read
		// on another replica storing it just after), and the tool waits,
		// if at all, for an authorization of what it is now.
		return out(&Outcome{Status: http.StatusConflict, Reason: "stale_link", Title: "This link is out of date",
			Message: "The tool was reconfigured after this link was made, so Quiver did not use it. Start the connection again from Quiver."})
	}
	e, steps, err := f.opts.Tools.Entry(t)
	if err != nil || toolconfig.State(t.State) != toolconfig.AwaitingAuthorization || t.StepIndex >= len(steps) {
		return out(&Outcome{Status: http.StatusConflict, Reason: "not_waiting", Title: "Nothing to connect",
			Message: "The tool is not waiting for an authorization (it may be connected already, or was reset)."})
	}
	if o := f.issuerRefused(ctx, t, q); o != nil {
		return out(o)
	}
	p, err := f.provider(t, e)
	if err != nil {
		return out(&Outcome{Status: http.StatusConflict, Reason: "provider_not_configured", Title: "The provider is not set up",
			Message: "This server has no OAuth client for the tool's provider."})
	}
	verifier, err := f.opts.Box.Open(st.Verifier)
	if err != nil {
		f.opts.Logger.ErrorContext(ctx, "oauth callback: the sealed verifier cannot be opened", "tool", st.ToolID)
		return out(&Outcome{Status: http.StatusInternalServerError, Reason: "internal", Title: "Something went wrong",
			Message: "Quiver could not complete the connection. Start it again from Quiver."})
	}
	xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout)
	defer cancel()
	opts := append([]oauth2.AuthCodeOption{oauth2.VerifierOption(string(verifier))}, p.tokenParams...)
	tok, err := p.cfg.Exchange(f.clientCtx(xctx), code, opts...)
	if err == nil {
		if err = checkTokenType(p, tok); err != nil && p.revocationURL != "" {
			// Issued, and not kept: revoked as an unkept grant is.
			f.revokePair(xctx, p, st.ToolID, tok.RefreshToken, tok.AccessToken)
		}
	}
	if err != nil {
		f.opts.Logger.WarnContext(ctx, "oauth code exchange failed", "tool", st.ToolID, "provider", p.name, "error", safeError(err))
		return out(&Outcome{Status: http.StatusBadGateway, Reason: "exchange_failed", Title: "The connection failed",
			Message: "The provider did not accept the authorization (" + safeError(err) + "). Start the connection again from Quiver."})
	}
	if _, err := f.opts.Tools.Authorized(xctx, st.AccountID, st.ToolID, t.Version, toToken(tok)); err != nil {
		pe, _ := problem.As(err)
		gone, changed := pe != nil && pe.Code == problem.NotFound, errors.Is(err, store.ErrConflict)
		if gone || changed {
			// The tool was deleted or reset while the user authorized: the
			// grant just issued is kept nowhere, so it is revoked as a
			// delete revokes a kept one, not left live at the provider.
			f.revokeUnkept(xctx, p, st.AccountID, st.ToolID, gone, tok.RefreshToken, tok.AccessToken)
		}
		if gone {
			return out(&Outcome{Status: http.StatusNotFound, Reason: "tool_gone", Title: "The tool is gone",
				Message: "The tool this authorization was for no longer exists."})
		}
		if changed {
			return out(&Outcome{Status: http.StatusConflict, Reason: "not_waiting", Title: "Nothing to connect",
				Message: "The tool changed while you were authorizing (it was connected or reset meanwhile)."})
		}
		f.opts.Logger.ErrorContext(ctx, "oauth callback: storing the token failed", "tool", st.ToolID, "error", err)
		return out(&Outcome{Status: http.StatusServiceUnavailable, Reason: "unavailable", Title: "Something went wrong",
			Message: "Quiver could not store the connection right now. Start it again from Quiver."})
	}
	// The tool's other links are void now. Left alive, one handed out
	// before this connection would connect the tool again once its grant
	// is revoked and it is back at its oauth step. Should this fail, they
	// still expire within StateTTL.
	if err := f.opts.Store.DeleteUnusedOAuthStates(xctx, st.ToolID); err != nil {
		f.opts.Logger.WarnContext(ctx, "oauth callback: the tool's other authorization links could not be voided", "tool", st.ToolID, "error", err)
	}
	return out(&Outcome{Status: http.StatusOK, OK: true, Reason: "connected", Title: t.Name + " is connected",
		Message: "Quiver can now use " + t.Name + " on your behalf. You can close this window."})
}

// revokeUnkept revokes at p the tokens just issued for the tool that a
// write could not store, because the tool was deleted (gone) or changed
// meanwhile. A changed tool is read again: one that holds a grant now
// (connected meanwhile) keeps it, which at some providers is this one too
// (the same user and client), so it is left alone.
func (f *Flow) revokeUnkept(ctx context.Context, p *provider, accountID, toolID int64, gone bool, refresh, access string) {
	if p.revocationURL == "" || !gone && !f.holdsNoGrant(ctx, accountID, toolID) {
		return
	}
	f.revokePair(ctx, p, toolID, refresh, access)
}

// holdsNoGrant reports whether the tool is gone or holds no OAuth token,
// as read now.
func (f *Flow) holdsNoGrant(ctx context.Context, accountID, toolID int64) bool {
	t, err := f.opts.Store.GetTool(ctx, accountID, toolID)
	return errors.Is(err, store.ErrNotFound) || err == nil && t.OAuthToken == ""
}

// issuerRefused is the outcome of an authorization response to t's flow
// that checkIssuer refuses, or nil.
func (f *Flow) issuerRefused(ctx context.Context, t *store.Tool, q url.Values) *Outcome {
	switch err := checkIssuer(t, q); {
	case errors.Is(err, errIssuerMismatch):
		f.opts.Logger.WarnContext(ctx, "oauth callback: the response names another issuer (RFC 9207); it was not used", "tool", t.ID)
		return &Outcome{Status: http.StatusBadRequest, Reason: "issuer_mismatch", Title: "This answer came from another server",
			Message: "The authorization answer names a different authorization server than the one this tool uses, so Quiver did not use it. Start the connection again from Quiver."}
	case errors.Is(err, errIssuerMissing):
		return &Outcome{Status: http.StatusBadRequest, Reason: "issuer_missing", Title: "This link is incomplete",
			Message: "The authorization answer does not name its authorization server, which this tool's server always does, so Quiver did not use it. Start the connection again from Quiver."}
	}
	return nil
}

// Errors of checkIssuer.
var (
	errIssuerMismatch = errors.New("oauth: the authorization response names another issuer")
	errIssuerMissing  = errors.New("oauth: the authorization response names no issuer, though its server always does")
)

// checkIssuer is RFC 9207's defence against a mix-up attack: all providers
// share one callback, so a code that another authorization server issued
// (one the user was sent to by a malicious one) must not reach the token
// endpoint of the tool's own. The tool's discovered issuer is what its
// flow was started with: a reset, which alone changes it, ends the flow's
// states. The iss parameter must equal it by simple string comparison
// (RFC 9207 §2.4), whenever present, and must be present when the server's
// metadata says it always is. A catalog provider has no issuer identifier
// to compare with; its iss is not checked.
func checkIssuer(t *store.Tool, q url.Values) error {
	d, ok := toolconfig.Discovered(t)
	if !ok || d.Issuer == "" {
		return nil
	}
	iss, present := q["iss"]
	switch {
	case !present && d.IssParameterSupported:
		return errIssuerMissing
	case !present:
		return nil
	case len(iss) != 1 || iss[0] != d.Issuer:
		return errIssuerMismatch
	}
	return nil
}

// Handler serves GET CallbackPath: it completes the authorization and shows
// a small page saying how it went.
func (f *Flow) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		o := f.Callback(r.Context(), r.URL.Query())
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer") // the URL carries the code
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'") // no framing: RFC 9700 §4.9
		h.Set("X-Quiver-OAuth-Outcome", o.Reason)
		w.WriteHeader(o.Status)
		_ = page.Execute(w, o)
	})
}

var page = template.Must(template.New("callback").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Quiver</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}.ok{color:#1a7f37}.err{color:#b42318}</style></head>
<body><h1 class="{{if .OK}}ok{{else}}err{{end}}">{{.Title}}</h1><p>{{.Message}}</p>
<p data-outcome="{{.Reason}}"><small>Quiver</small></p></body></html>
`))
