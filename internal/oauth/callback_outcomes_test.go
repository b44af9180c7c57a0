package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// awaiting puts s's tool back at its oauth step, with no token.
func (s *setup) awaiting(t *testing.T) {
	t.Helper()
	row, _ := s.stored(t)
	if err := s.tools.Revoke(row); err != nil {
		t.Fatal(err)
	}
	if err := s.st.UpdateToolConfig(context.Background(), row, string(toolconfig.Configured), row.Version); err != nil {
		t.Fatal(err)
	}
}

// link returns the state of the authorization link s's tool shows now.
func (s *setup) link(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	row, _ := s.stored(t)
	e, steps, err := s.tools.Entry(row)
	if err != nil {
		t.Fatal(err)
	}
	link, err := s.flow.AuthorizationURL(ctx, row, e, &steps[row.StepIndex])
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("state")
}

// TestCallbackOutcomes pins what a callback comes to when the provider's
// answer is incomplete, an error, or cannot be exchanged: each is its own
// outcome, consumes the state (a replay is told so), leaves the tool
// waiting at its oauth step, and shows nothing of the code or the
// provider's words; a new link then connects the tool.
func TestCallbackOutcomes(t *testing.T) {
	// The token endpoint exchanges code-ok, presented with a PKCE
	// verifier, and refuses any other code; fail, when set, is the status
	// of every answer instead.
	var fail atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case fail.Load() != 0:
			w.WriteHeader(int(fail.Load()))
			io.WriteString(w, `{"error":"server_error","error_description":"desc-secret"}`)
		case r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("code") != "code-ok" || r.PostForm.Get("code_verifier") == "":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"desc-secret"}`)
		default:
			io.WriteString(w, `{"access_token":"at-new","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-new"}`)
		}
	}))
	t.Cleanup(ts.Close)
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first"})
	ctx := context.Background()
	s.awaiting(t)
	for _, c := range []struct {
		name   string
		query  url.Values
		fail   int32 // the token endpoint's status, 0: it answers
		status int
		reason string
	}{
		{"no state", url.Values{"code": {"code-secret"}}, 0, http.StatusBadRequest, "missing_state"},
		{"unknown state", url.Values{"code": {"code-secret"}, "state": {"nope"}}, 0, http.StatusBadRequest, "unknown_state"},
		{"no code", url.Values{}, 0, http.StatusBadRequest, "missing_code"},
		{"denied", url.Values{"error": {"access_denied"}}, 0, http.StatusForbidden, "denied"},
		{"provider error", url.Values{"error": {`temporarily_unavailable<b>"x"</b>`}, "error_description": {"desc-secret"}}, 0, http.StatusBadGateway, "provider_error"},
		{"exchange refused", url.Values{"code": {"code-secret"}}, 0, http.StatusBadGateway, "exchange_failed"},
		{"exchange down", url.Values{"code": {"code-secret"}}, http.StatusServiceUnavailable, http.StatusBadGateway, "exchange_failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := url.Values{}
			for k, v := range c.query {
				q[k] = v
			}
			if c.reason != "missing_state" && c.reason != "unknown_state" {
				q.Set("state", s.link(t))
			}
			fail.Store(c.fail)
			defer fail.Store(0)
			o := s.flow.Callback(ctx, q)
			if o.Status != c.status || o.Reason != c.reason || o.OK {
				t.Fatalf("callback: %d %s, want %d %s", o.Status, o.Reason, c.status, c.reason)
			}
			text := o.Title + " " + o.Message + " " + s.logs.String()
			for _, secret := range []string{"code-secret", "desc-secret", "<b>", "client-secret"} {
				if strings.Contains(text, secret) {
					t.Fatalf("the outcome or the logs show %q: %s", secret, text)
				}
			}
			if row, tok := s.stored(t); row.State != string(toolconfig.AwaitingAuthorization) || tok != nil {
				t.Fatalf("the tool after %s: state %s, token %t", c.name, row.State, tok != nil)
			}
			if q.Get("state") != "nope" && q.Get("state") != "" {
				if again := s.flow.Callback(ctx, q); again.Reason != "replayed_state" {
					t.Fatalf("replay: %s, want replayed_state", again.Reason)
				}
			}
		})
	}
	o := s.flow.Callback(ctx, url.Values{"code": {"code-ok"}, "state": {s.link(t)}})
	if !o.OK || o.Reason != "connected" {
		t.Fatalf("a new link after the failures: %d %s", o.Status, o.Reason)
	}
	if row, tok := s.stored(t); row.State != string(toolconfig.Configured) || tok == nil || tok.AccessToken != "at-new" || tok.RefreshToken != "rt-new" {
		t.Fatalf("connected, but stored state %s, token %t", row.State, tok != nil)
	}
	var used int64
	if err := s.st.DB().Model(&store.OAuthState{}).Where("tool_id = ? AND used_at IS NULL", s.tool.ID).Count(&used).Error; err != nil || used != 0 {
		t.Fatalf("%d unused links left after connecting (%v), want 0", used, err)
	}
}

// downReads is a store whose reads of a tool fail as a database outage
// does, once down is set.
type downReads struct {
	*store.Store
	down atomic.Bool
}

func (d *downReads) GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error) {
	if d.down.Load() {
		return nil, fmt.Errorf("reading tool %d: %w", id, store.ErrUnavailable)
	}
	return d.Store.GetTool(ctx, accountID, id)
}

// TestCallbackDuringAnOutageIsNotToolGone: a callback that cannot read its
// tool because the database is down says so, and that the connection is
// to be started again; it used to tell the person the tool no longer
// exists.
func TestCallbackDuringAnOutageIsNotToolGone(t *testing.T) {
	s := newSetup(t, "http://127.0.0.1:1/token", &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first"})
	s.awaiting(t)
	state := s.link(t)
	d := &downReads{Store: s.st}
	s.flow.opts.Store = d
	d.down.Store(true)
	o := s.flow.Callback(context.Background(), url.Values{"code": {"code-secret"}, "state": {state}})
	if o.Status != http.StatusServiceUnavailable || o.Reason != "unavailable" || strings.Contains(o.Message, "no longer exists") {
		t.Fatalf("callback with the database down: %d %s %q, want 503 unavailable", o.Status, o.Reason, o.Message)
	}
}
