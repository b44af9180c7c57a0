package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testlog"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// tokenServer is a token endpoint with rotating refresh tokens.
type tokenServer struct {
	*httptest.Server
	mu        sync.Mutex
	live      map[string]bool
	n         int
	refreshes atomic.Int64
	// ttl is the lifetime of the access tokens it issues, in seconds
	// (3600 unless set).
	ttl atomic.Int64
	// fail, when set, is the HTTP status every token request gets, with
	// error server_error; requests counts every token request.
	fail     atomic.Int32
	requests atomic.Int64
	// basic is set when the last token request authenticated with HTTP
	// Basic rather than in the form.
	basic atomic.Bool
}

func startTokenServer(t *testing.T, first string) *tokenServer {
	ts := &tokenServer{live: map[string]bool{first: true}}
	ts.ttl.Store(3600)
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		ts.requests.Add(1)
		_, _, basic := r.BasicAuth()
		ts.basic.Store(basic && r.PostForm.Get("client_secret") == "")
		time.Sleep(20 * time.Millisecond) // widen the window for a second refresh
		if status := ts.fail.Load(); status != 0 {
			w.WriteHeader(int(status))
			w.Write([]byte(`{"error":"server_error"}`))
			return
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		rt := r.PostForm.Get("refresh_token")
		if !ts.live[rt] {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant","error_description":"` + rt + `"}`))
			return
		}
		delete(ts.live, rt)
		ts.n++
		ts.refreshes.Add(1)
		next := "rt-" + string(rune('a'+ts.n))
		ts.live[next] = true
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + string(rune('a'+ts.n)), "token_type": "Bearer",
			"expires_in": ts.ttl.Load(), "refresh_token": next})
	}))
	t.Cleanup(ts.Close)
	return ts
}

type setup struct {
	st    *store.Store
	tools *toolconfig.Service
	flow  *Flow
	box   *secrets.Box
	tool  *store.Tool
	logs  *testlog.Buffer
}

func newSetup(t *testing.T, tokenURL string, tok *toolconfig.Token) *setup {
	return newSetupOn(t, store.Options{DataDir: t.TempDir()}, tokenURL, tok)
}

// newSetupOn is newSetup on the database opts names.
func newSetupOn(t *testing.T, opts store.Options, tokenURL string, tok *toolconfig.Token) *setup {
	ctx := context.Background()
	st, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tools := toolconfig.New(toolconfig.Options{Store: st, Catalog: cat, Box: box, Connectors: connectors.Registry{}, Logger: logger})
	flow := New(Options{Store: st, Tools: tools, Box: box, Clients: map[string]Client{"github": {ID: "id", Secret: "client-secret"}},
		Endpoints: map[string]Endpoint{"github": {TokenURL: tokenURL}}, PublicURL: "http://quiver.test", AllowPrivate: true, Logger: logger})
	tools.SetOAuth(flow)
	acct, err := st.EnsureAccount(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := toolconfig.SealToken(box, tok)
	if err != nil {
		t.Fatal(err)
	}
	tool := &store.Tool{AccountID: acct.ID, CatalogName: "github-mcp", Name: "gh", State: string(toolconfig.Configured),
		StepIndex: 1, Config: "{}", OAuthToken: sealed}
	if err := st.CreateTool(ctx, tool); err != nil {
		t.Fatal(err)
	}
	return &setup{st: st, tools: tools, flow: flow, box: box, tool: tool, logs: logs}
}

func (s *setup) stored(t *testing.T) (*store.Tool, *toolconfig.Token) {
	row, err := s.st.GetTool(context.Background(), s.tool.AccountID, s.tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.OAuthToken == "" {
		return row, nil
	}
	tok, err := toolconfig.OpenToken(s.box, row.OAuthToken)
	if err != nil {
		t.Fatal(err)
	}
	return row, tok
}

func TestRefreshSingleFlight(t *testing.T) {
	ts := startTokenServer(t, "rt-first")
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(10 * time.Second)})
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := ts.refreshes.Load(); n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
	row, tok := s.stored(t)
	if tok.AccessToken != "at-b" || tok.RefreshToken != "rt-b" || row.Version != s.tool.Version+1 {
		t.Fatalf("stored %q/%q version %d", tok.AccessToken, tok.RefreshToken, row.Version)
	}

	// A refused token that is no longer the stored one: no refresh.
	if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "at-first"); err != nil || ts.refreshes.Load() != 1 {
		t.Fatalf("stale refusal refreshed: %v, %d", err, ts.refreshes.Load())
	}
	// The stored token refused: one refresh with the rotated refresh token.
	if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "at-b"); err != nil || ts.refreshes.Load() != 2 {
		t.Fatalf("refusal: %v, %d", err, ts.refreshes.Load())
	}
	if strings.Contains(s.logs.String(), "rt-") || strings.Contains(s.logs.String(), "at-") {
		t.Fatalf("logs carry a token:\n%s", s.logs.String())
	}
}

func TestRefreshInvalidGrantRevokes(t *testing.T) {
	ts := startTokenServer(t, "rt-other")
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-old", RefreshToken: "rt-dead", Expiry: time.Now().Add(-time.Minute)})
	row, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "")
	if !errors.Is(err, toolconfig.ErrGrantRevoked) {
		t.Fatalf("err = %v", err)
	}
	if row.State != string(toolconfig.AwaitingAuthorization) || row.StepIndex != 0 || row.OAuthToken != "" {
		t.Fatalf("row after revocation: state %s step %d token %t", row.State, row.StepIndex, row.OAuthToken != "")
	}
	stored, tok := s.stored(t)
	if stored.State != string(toolconfig.AwaitingAuthorization) || tok != nil {
		t.Fatal("revocation not stored")
	}
	// Resolve now answers tool_not_configured with the oauth step.
	_, err = s.tools.Resolve(context.Background(), s.tool.AccountID, s.tool.ID)
	if err == nil || !strings.Contains(err.Error(), "tool_not_configured") {
		t.Fatalf("resolve: %v", err)
	}
	if strings.Contains(s.logs.String(), "rt-dead") {
		t.Fatal("logs carry the refresh token from the provider's error")
	}
}

func TestAuthorizationURLAndState(t *testing.T) {
	s := newSetup(t, "http://127.0.0.1:1/token", &toolconfig.Token{AccessToken: "x"})
	e, steps, err := s.tools.Entry(s.tool)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.flow.AuthorizationURL(context.Background(), s.tool, e, &steps[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"code_challenge_method=S256", "code_challenge=", "state=", "client_id=id",
		"redirect_uri=http%3A%2F%2Fquiver.test%2Fapi%2Fv1%2Foauth%2Fcallback"} {
		if !strings.Contains(u, want) {
			t.Errorf("authorization URL %s lacks %s", u, want)
		}
	}
	if strings.Contains(u, "client-secret") {
		t.Error("authorization URL carries the client secret")
	}
	// A provider without a client is reported as such.
	delete(s.flow.opts.Clients, "github")
	if _, err := s.flow.AuthorizationURL(context.Background(), s.tool, e, &steps[0]); !errors.Is(err, toolconfig.ErrProviderNotConfigured) {
		t.Fatalf("err = %v", err)
	}
}

func TestSanitizeCode(t *testing.T) {
	if got := sanitizeCode(`access_denied<script>"x"`); got != "access_deniedscriptx" {
		t.Fatalf("got %q", got)
	}
}

// TestRefreshShortLivedToken: a provider that issues 30-second tokens gets
// one refresh for many calls that find the token due, not one each. The
// leeway used to be a fixed minute, so a token fresh from the provider was
// already due and every waiting call refreshed again in turn.
func TestRefreshShortLivedToken(t *testing.T) {
	ts := startTokenServer(t, "rt-first")
	ts.ttl.Store(30)
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first",
		IssuedAt: time.Now().Add(-25 * time.Second), Expiry: time.Now().Add(5 * time.Second)})
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := ts.refreshes.Load(); n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
	if _, tok := s.stored(t); tok.Expiring(time.Now()) {
		t.Fatalf("the new token (expiry in %v) is due for a refresh at once", time.Until(tok.Expiry))
	}
}

// TestRefreshFailureAsksOnce: a token request the provider fails is not
// sent again with the client's credentials moved. oauth2's AutoDetect auth
// style retries any failed request that way, which presents one refresh
// token twice: a provider that detects reuse of a rotating refresh token
// revokes the grant.
func TestRefreshFailureAsksOnce(t *testing.T) {
	for _, status := range []int32{http.StatusInternalServerError, http.StatusBadRequest} {
		ts := startTokenServer(t, "rt-first")
		ts.fail.Store(status)
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
		if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, ""); err == nil {
			t.Fatalf("status %d: the refresh succeeded", status)
		}
		if n := ts.requests.Load(); n != 1 || ts.basic.Load() {
			t.Fatalf("status %d: %d token requests (basic %t), want 1 with the secret in the form", status, n, ts.basic.Load())
		}
	}

	// QUIVER_OAUTH_<PROVIDER>_TOKEN_AUTH=client_secret_basic: HTTP Basic.
	ts := startTokenServer(t, "rt-first")
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
	s.flow.opts.Endpoints["github"] = Endpoint{TokenURL: ts.URL, TokenAuth: catalog.TokenAuthBasic}
	if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, ""); err != nil || !ts.basic.Load() {
		t.Fatalf("basic: %v, basic %t", err, ts.basic.Load())
	}
}

// TestRefreshRefusedFresh: a token the server refused right after the
// refresh that made it is not refreshed again for RefusedAgainWait; after
// that, or for any other token, a refusal refreshes as ever.
func TestRefreshRefusedFresh(t *testing.T) {
	ts := startTokenServer(t, "rt-first")
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(time.Hour)})
	ctx := context.Background()
	s.flow.RefusedFresh(s.tool.ID, "at-first")
	for range 3 {
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, "at-first"); !errors.Is(err, toolconfig.ErrRefusedAgain) {
			t.Fatalf("refusal of a token refused fresh: %v, want ErrRefusedAgain", err)
		}
	}
	if n := ts.refreshes.Load(); n != 0 {
		t.Fatalf("refreshes = %d, want 0", n)
	}
	if n := strings.Count(s.logs.String(), "refuses even a freshly refreshed token"); n != 1 {
		t.Fatalf("%d warnings logged for three refusals, want 1:\n%s", n, s.logs.String())
	}
	// The window ends: the next refusal refreshes.
	g := s.flow.gate(s.tool.ID)
	g.mu.Lock()
	g.refusedAt = time.Now().Add(-RefusedAgainWait)
	g.mu.Unlock()
	if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, "at-first"); err != nil || ts.refreshes.Load() != 1 {
		t.Fatalf("refusal after the window: %v, %d refreshes", err, ts.refreshes.Load())
	}
	// Another token marked does not hold back a refusal of the stored one.
	s.flow.RefusedFresh(s.tool.ID, "at-elsewhere")
	if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, "at-b"); err != nil || ts.refreshes.Load() != 2 {
		t.Fatalf("refusal of an unmarked token: %v, %d refreshes", err, ts.refreshes.Load())
	}
}

// TestRefreshWaitersShareTheFailure: callers that waited behind a refresh
// the provider refused get that refresh's kind of failure, without asking
// again: here invalid_client, which no retry heals, not "retry shortly".
func TestRefreshWaitersShareTheFailure(t *testing.T) {
	var requests atomic.Int64
	first, release := make(chan struct{}), make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			close(first)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client","error_description":"unknown client"}`)
	}))
	t.Cleanup(ts.Close)
	s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "")
			errs <- err
		}()
	}
	<-first
	time.Sleep(100 * time.Millisecond) // the other callers reach the gate
	close(release)
	for range callers {
		if err := <-errs; !errors.Is(err, toolconfig.ErrClientRejected) {
			t.Errorf("a caller got %v, want ErrClientRejected", err)
		}
	}
	if n := requests.Load(); n >= callers {
		t.Fatalf("%d token requests for %d callers: the waiters asked again", n, callers)
	}
}

// TestTokenRequestNotRedirected: a token endpoint that answers a refresh
// with a redirect does not get its refresh token and the client's secret
// sent on to where it points (a 307 re-sends the body): the refresh fails,
// and the other place hears nothing.
func TestTokenRequestNotRedirected(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/token", status)
		}))
		t.Cleanup(redirecting.Close)
		s := newSetup(t, redirecting.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
		if _, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, ""); err == nil {
			t.Errorf("status %d: the refresh succeeded", status)
		}
		if n := elsewhere.Load(); n != 0 {
			t.Fatalf("status %d: the redirect's target got %d requests", status, n)
		}
	}
}

// An authorization URL is shown again while its state is fresh, for the
// tool's version and step it was made for; a state whose sealed parts do
// not open (another key) is not, and a new one is made.
func TestAuthorizationURLShownAgain(t *testing.T) {
	s := newSetup(t, "http://127.0.0.1:1/token", &toolconfig.Token{AccessToken: "x"})
	ctx := context.Background()
	e, steps, err := s.tools.Entry(s.tool)
	if err != nil {
		t.Fatal(err)
	}
	url := func(tool *store.Tool) string {
		t.Helper()
		u, err := s.flow.AuthorizationURL(ctx, tool, e, &steps[0])
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	first := url(s.tool)
	if again := url(s.tool); again != first {
		t.Fatalf("shown again: %s, want %s", again, first)
	}
	next := *s.tool
	next.Version++
	other := url(&next)
	if other == first {
		t.Fatal("another version of the tool was shown the link of the one before")
	}
	if n, _ := s.st.CountOAuthStates(ctx, s.tool.ID); n != 2 {
		t.Fatalf("%d states, want 2", n)
	}
	if err := s.st.DB().Model(&store.OAuthState{}).Where("tool_id = ?", s.tool.ID).
		Update("sealed_state", s.box.Seal([]byte("not the state"))).Error; err != nil {
		t.Fatal(err)
	}
	if u := url(&next); u == other {
		t.Fatal("a state whose sealed state does not match its hash was shown again")
	}
}
