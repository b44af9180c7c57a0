package toolconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// Store is the persistence toolconfig needs.
type Store interface {
	CreateTool(ctx context.Context, t *store.Tool) error
	GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	ListTools(ctx context.Context, accountID int64, p store.Page) ([]store.Tool, string, error)
	ToolsByCatalogName(ctx context.Context, accountID int64, name string) ([]store.Tool, error)
	UpdateToolConfig(ctx context.Context, t *store.Tool, wantState string, wantVersion int64) error
	DeleteTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	DeleteOAuthStates(ctx context.Context, toolID int64) error
}

var _ Store = (*store.Store)(nil)

// OAuthFlow starts OAuth authorizations. ErrProviderNotConfigured means the
// server has no client for the step's provider.
type OAuthFlow interface {
	AuthorizationURL(ctx context.Context, t *store.Tool, entry *catalog.Entry, step *catalog.Step) (string, error)
}

// ErrProviderNotConfigured is returned by an OAuthFlow for a provider with
// no client on this server.
var ErrProviderNotConfigured = errors.New("toolconfig: OAuth provider not configured on this server")

// Options configures a Service.
type Options struct {
	Store      Store
	Catalog    *catalog.Catalog
	Box        *secrets.Box
	Connectors connectors.Registry
	OAuth      OAuthFlow // nil: every oauth step says its provider is not set up
	// CacheTTL bounds how stale a resolved tool may be on another replica.
	CacheTTL time.Duration
	Logger   *slog.Logger
	// VerifyTimeout bounds a connector's check of a step's credentials.
	VerifyTimeout time.Duration
	// Now is the clock that judges whether an OAuth access token is due for
	// a refresh, or still lives long enough to be used; nil means time.Now.
	Now func() time.Time
}

// Service manages connected tools and their configuration.
type Service struct {
	opts  Options
	mu    sync.Mutex
	cache map[toolKey]cachedTool
	names map[int64]map[string]cachedName // account → catalog name → its one tool
	// revoking counts the revocations at providers still under way
	// (revokeDetached).
	revoking    sync.WaitGroup
	revocations atomic.Int64
	// epoch counts this replica's invalidations. A read caches what it
	// read only if none happened since it began: a write that landed
	// while it read would otherwise be undone by the old row it caches.
	epoch atomic.Uint64
}

type toolKey struct{ account, id int64 }

type cachedName struct {
	id      int64
	expires time.Time
}

type cachedTool struct {
	resolved *Resolved
	expires  time.Time
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.VerifyTimeout == 0 {
		opts.VerifyTimeout = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{opts: opts, cache: map[toolKey]cachedTool{}, names: map[int64]map[string]cachedName{}}
}

// SetOAuth installs the OAuth flow (it needs the Service's store first).
func (s *Service) SetOAuth(f OAuthFlow) { s.opts.OAuth = f }

// Catalog returns the catalog the service uses.
func (s *Service) Catalog() *catalog.Catalog { return s.opts.Catalog }

func notFound(id int64) *problem.Error {
	return problem.New(problem.NotFound, "No connected tool with ID %d.", id)
}

func (s *Service) get(ctx context.Context, accountID, id int64) (*store.Tool, *catalog.Entry, error) {
	t, err := s.opts.Store.GetTool(ctx, accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, notFound(id)
	}
	if err != nil {
		return nil, nil, err
	}
	e, ok := s.opts.Catalog.Get(t.CatalogName)
	if !ok {
		return nil, nil, s.notInThisCatalog(ctx, t)
	}
	return t, e, nil
}

// Create connects a catalog tool to the account.
func (s *Service) Create(ctx context.Context, accountID int64, catalogName, name string) (*View, error) {
	e, ok := s.opts.Catalog.Get(catalogName)
	if !ok {
		return nil, s.NotInCatalog(catalogName)
	}
	first, _ := e.Step(0)
	state, err := Transition("", EventCreated, first)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = catalogName
	}
	t := &store.Tool{AccountID: accountID, CatalogName: catalogName, Name: name, State: string(state), Config: "{}"}
	if err := s.opts.Store.CreateTool(ctx, t); err != nil {
		return nil, err
	}
	s.invalidate(accountID, t.ID)
	return s.view(ctx, t, e)
}

// Get returns the account's tool.
func (s *Service) Get(ctx context.Context, accountID, id int64) (*View, error) {
	t, e, err := s.get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, t, e)
}

// List returns one page of the account's tools.
func (s *Service) List(ctx context.Context, accountID int64, p store.Page) ([]*View, string, error) {
	rows, next, err := s.opts.Store.ListTools(ctx, accountID, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]*View, 0, len(rows))
	for i := range rows {
		e, ok := s.opts.Catalog.Get(rows[i].CatalogName)
		if !ok {
			continue
		}
		v, err := s.view(ctx, &rows[i], e)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// Delete removes the account's tool, its tokens and its attachments. The
// OAuth tokens the row held as it was deleted are then revoked at the
// provider, detached from the request (revokeDetached).
func (s *Service) Delete(ctx context.Context, accountID, id int64) error {
	deleted, err := s.opts.Store.DeleteTool(ctx, accountID, id)
	s.invalidate(accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if err == nil {
		s.revokeDetached(ctx, deleted)
	}
	return err
}

// reset is Reset's one attempt; errOvertaken when another change to the
// tool landed first.
func (s *Service) reset(ctx context.Context, accountID, id int64) (*View, error) {
	t, e, err := s.get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	first, _ := e.Step(0)
	to, err := Transition(State(t.State), EventReset, first)
	if err != nil {
		return nil, err
	}
	// Authorization links handed out for the configuration being forgotten
	// die with it (a callback already under way is stopped by the version
	// this bumps: Authorized).
	if err := s.opts.Store.DeleteOAuthStates(ctx, t.ID); err != nil {
		return nil, err
	}
	from, version, before := t.State, t.Version, *t
	t.State, t.StepIndex, t.Config, t.Secrets, t.OAuthToken = string(to), 0, "{}", "", ""
	if err := s.update(ctx, t, from, version); err != nil {
		return nil, err
	}
	// The update was conditional on version: the tokens read are the ones
	// it dropped, and the provider hears of it only now it is committed.
	s.revokeDetached(ctx, &before)
	return s.view(ctx, t, e)
}

// provide is Provide's one attempt; errOvertaken when another change to
// the tool landed first.
func (s *Service) provide(ctx context.Context, accountID, id int64, answers map[string]json.RawMessage) (*View, error) {
	t, e, err := s.get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	switch State(t.State) {
	case Configured:
		// API.md: provide-config answers 200 (advanced) or 422 (unchanged).
		if len(s.toolSteps(t, e)) == 0 {
			return nil, problem.Validation("The tool needs no configuration: it has no steps to answer.",
				map[string]string{"user_response": "this tool has no configuration steps"})
		}
		return nil, problem.Validation("The tool is already configured; reset its configuration to change it.",
			map[string]string{"user_response": "the tool is already configured; reset-config starts it again at its first step"})
	case AwaitingAuthorization:
		return nil, problem.Validation("This step is completed by authorizing at the provider, not by answers: "+
			"open the authorization_url of the tool's next_configuration_step, or, where it has none, read why in its description.",
			map[string]string{"user_response": "this step takes no answers; it is completed through the provider's authorization page"})
	}
	toolSteps := s.toolSteps(t, e)
	step := stepAt(toolSteps, t.StepIndex)
	if step == nil {
		return nil, fmt.Errorf("toolconfig: tool %d is at step %d of %d", t.ID, t.StepIndex, len(e.Steps))
	}
	values, bad := validateStep(step, answers)
	for name, msg := range strayAnswers(toolSteps, t.StepIndex, answers) {
		bad[name] = msg
	}
	if len(bad) > 0 {
		return nil, problem.Validation("Some answers to this configuration step are not valid.", bad)
	}
	plain, secret, err := s.decode(t)
	if err != nil {
		return nil, err
	}
	reseal(toolSteps, plain, secret)
	for _, f := range step.Fields {
		delete(plain, f.Name)
		delete(secret, f.Name)
		v, ok := values[f.Name]
		if !ok {
			continue
		}
		if sealed(&f, v) {
			secret[f.Name] = v
		} else {
			plain[f.Name] = v
		}
	}
	if step.Verify {
		if err := s.verify(ctx, e, plain, secret); err != nil {
			if p, ok := problem.As(err); ok {
				return nil, scrubSecrets(p, secret)
			}
			return nil, err
		}
	}
	steps := stepsWith(e, plain) // with an oauth step verify may have discovered
	next := stepAt(steps, t.StepIndex+1)
	to, err := Transition(State(t.State), EventStepAccepted, next)
	if err != nil {
		return nil, err
	}
	from, version := t.State, t.Version
	if err := s.encode(t, plain, secret); err != nil {
		return nil, err
	}
	t.State, t.StepIndex = string(to), t.StepIndex+1
	if to == Configured {
		t.StepIndex = len(steps)
	}
	if err := s.update(ctx, t, from, version); err != nil {
		return nil, err
	}
	return s.view(ctx, t, e)
}

func (s *Service) verify(ctx context.Context, e *catalog.Entry, plain, secret map[string]any) error {
	conn, ok := s.opts.Connectors.For(e)
	if !ok {
		return nil
	}
	v, ok := conn.(connectors.Verifier)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.VerifyTimeout)
	defer cancel()
	config := flatten(plain, secret)
	err := v.Verify(ctx, e, config)
	if err == nil {
		return nil
	}
	// Discovery first: a 401 that names no OAuth metadata is a field
	// error too, the one to give when none is found at its well-known
	// URIs (mcp.OAuthRequiredError).
	if handled, derr := s.discover(ctx, err, config["url"], plain); handled {
		return derr
	}
	if fe := (*connectors.FieldError)(nil); errors.As(err, &fe) {
		return problem.Validation("The tool refused this configuration.", map[string]string{fe.Field: fe.Message})
	}
	s.opts.Logger.WarnContext(ctx, "verify failed", "catalog", e.Name, "error", err)
	return problem.Validation("The tool could not be verified with this configuration.", map[string]string{"user_response": err.Error()})
}

func flatten(plain, secret map[string]any) map[string]string {
	out := make(map[string]string, len(plain)+len(secret))
	for k, v := range plain {
		out[k] = asString(v)
	}
	for k, v := range secret {
		out[k] = asString(v)
	}
	return out
}

// decode reads a tool's stored plain and secret values.
func (s *Service) decode(t *store.Tool) (plain, secret map[string]any, err error) {
	plain, secret = map[string]any{}, map[string]any{}
	if t.Config != "" {
		if err := json.Unmarshal([]byte(t.Config), &plain); err != nil {
			return nil, nil, fmt.Errorf("toolconfig: tool %d config: %w", t.ID, err)
		}
	}
	if t.Secrets != "" {
		pt, err := s.opts.Box.Open(t.Secrets)
		if err != nil {
			return nil, nil, fmt.Errorf("toolconfig: tool %d secrets: %w", t.ID, err)
		}
		if err := json.Unmarshal(pt, &secret); err != nil {
			return nil, nil, fmt.Errorf("toolconfig: tool %d secrets: %w", t.ID, err)
		}
	}
	return plain, secret, nil
}

func (s *Service) encode(t *store.Tool, plain, secret map[string]any) error {
	b, err := json.Marshal(plain)
	if err != nil {
		return err
	}
	t.Config = string(b)
	t.Secrets = ""
	if len(secret) > 0 {
		sb, err := json.Marshal(secret)
		if err != nil {
			return err
		}
		t.Secrets = s.opts.Box.Seal(sb)
	}
	return nil
}

// view renders a tool for the API.
func (s *Service) view(ctx context.Context, t *store.Tool, e *catalog.Entry) (*View, error) {
	plain, secret, err := s.decode(t)
	if err != nil {
		return nil, err
	}
	cfg := make(map[string]any, len(plain)+len(secret))
	for k, v := range plain {
		cfg[k] = v
	}
	delete(cfg, DiscoveredKey)
	for _, st := range e.Steps {
		for i := range st.Fields {
			f := &st.Fields[i]
			if v, ok := secret[f.Name]; ok {
				cfg[f.Name] = mask(f, v)
			} else if v, ok := cfg[f.Name]; ok {
				cfg[f.Name] = mask(f, v) // a URL stored before its query was sealed
			}
		}
	}
	v := &View{
		ID: t.ID, MCPTool: t.CatalogName, Name: t.Name, Type: e.Type,
		IsConfigured: State(t.State) == Configured, Config: cfg,
		CreatedAt: toUTC(t.CreatedAt), UpdatedAt: toUTC(t.UpdatedAt),
	}
	if !v.IsConfigured {
		v.NextConfigurationStep = s.stepView(ctx, t, e)
	}
	return v, nil
}

// NextStep renders the step the tool waits at, for tool_not_configured.
func (s *Service) NextStep(ctx context.Context, t *store.Tool, e *catalog.Entry) *StepView {
	return s.stepView(ctx, t, e)
}

// ForListing marks ctx as a Resolve that only lists the tool (an agent's
// MCP endpoint building its tool list): the step of a tool not configured
// is answered without an authorization URL, since each one stores an
// authorization state that no one would follow, one per build.
func ForListing(ctx context.Context) context.Context {
	return context.WithValue(ctx, listingKey{}, true)
}

type listingKey struct{}

func listing(ctx context.Context) bool { return ctx.Value(listingKey{}) != nil }

func (s *Service) stepView(ctx context.Context, t *store.Tool, e *catalog.Entry) *StepView {
	steps := s.toolSteps(t, e)
	step := stepAt(steps, t.StepIndex)
	if step == nil {
		return nil
	}
	sv := &StepView{Step: step.ID, Index: t.StepIndex + 1, Total: len(steps), Type: step.Type,
		Title: step.Title, Description: step.Description, Fields: step.Fields}
	if step.Type != catalog.StepOAuth {
		return sv
	}
	if e.OAuth != nil {
		sv.Provider = e.OAuth.Provider
	}
	if listing(ctx) {
		return sv // no one will follow its link (ForListing)
	}
	if accounts.PrincipalFrom(ctx).ReadOnly {
		// Completing the step connects the tool: a read-only key may see
		// the step but not start it (and its reads leave no state behind).
		sv.Error = ReadOnlyKey
		sv.Description = "A read-only API key cannot connect a tool: read this step with a full key to get its authorization URL."
		return sv
	}
	var err error = ErrProviderNotConfigured
	if s.opts.OAuth != nil {
		sv.AuthorizationURL, err = s.opts.OAuth.AuthorizationURL(ctx, t, e, step)
	}
	if err != nil {
		sv.AuthorizationURL = ""
		if errors.Is(err, ErrProviderNotConfigured) {
			sv.Error = ProviderNotConfigured
			sv.Description = fmt.Sprintf("The %s OAuth provider is not set up on this server: an operator must set %s before this tool can be connected.", sv.Provider, clientVars(sv.Provider))
		} else {
			s.opts.Logger.ErrorContext(ctx, "oauth authorization url", "tool", t.ID, "error", err)
			sv.Error = "oauth_unavailable"
			sv.Description = "The authorization could not be started; try again shortly."
		}
	}
	return sv
}
