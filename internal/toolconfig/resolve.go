package toolconfig

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// Resolved is a configured tool, ready to call.
type Resolved struct {
	Tool      *connectors.Tool
	Entry     *catalog.Entry
	Connector connectors.Connector
	// Row is the stored tool as read; shared, must not be modified.
	Row *store.Tool
	// refreshAt is when Tool.AccessToken is due for a refresh (zero:
	// never, or no token); expiry is when it expires (zero: not said).
	refreshAt, expiry time.Time
}

// Resolve returns the account's configured tool id for a call. The result
// is cached in process for CacheTTL; this replica's own writes invalidate it
// at once, other replicas' within CacheTTL.
func (s *Service) Resolve(ctx context.Context, accountID, id int64) (*Resolved, error) {
	if r := s.cached(accountID, id); r != nil {
		return s.fresh(ctx, r)
	}
	r, err := s.load(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	return s.fresh(ctx, r)
}

// load reads the account's configured tool id from the store and caches
// it, its token as stored (due for a refresh or not).
func (s *Service) load(ctx context.Context, accountID, id int64) (*Resolved, error) {
	since := s.epoch.Load()
	t, e, err := s.get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if State(t.State) != Configured {
		return nil, s.unconfigured(ctx, t, e)
	}
	conn, ok := s.opts.Connectors.For(e)
	if !ok {
		return nil, problem.New(problem.ToolUnreachable, "This server has no connector for %q.", e.Name)
	}
	plain, secret, err := s.decode(t)
	if err != nil {
		return nil, err
	}
	r := &Resolved{
		Tool: &connectors.Tool{
			ID: t.ID, AccountID: t.AccountID, Entry: e, Config: flatten(plain, secret), Version: t.Version,
		},
		Entry: e, Connector: conn, Row: t,
	}
	if err := s.attachToken(r); err != nil {
		return nil, err
	}
	s.remember(r, since)
	return r, nil
}

// remember caches r unless this replica invalidated a tool since epoch
// since: the write behind it may have landed after r was read, and caching
// r would then bring back what the write replaced (a reset tool's
// credentials, a deleted tool) for CacheTTL.
func (s *Service) remember(r *Resolved, since uint64) {
	if s.opts.CacheTTL <= 0 {
		return
	}
	s.mu.Lock()
	if s.epoch.Load() == since {
		s.cache[toolKey{r.Row.AccountID, r.Row.ID}] = cachedTool{resolved: r, expires: time.Now().Add(s.opts.CacheTTL)}
	}
	s.mu.Unlock()
}

// unconfigured is the tool_not_configured answer for a tool that has not
// finished its steps.
func (s *Service) unconfigured(ctx context.Context, t *store.Tool, e *catalog.Entry) *problem.Error {
	p := problem.New(problem.ToolNotConfigured, "Tool %d is not configured yet: finish its configuration steps first.", t.ID)
	p.Extra = map[string]any{"next_configuration_step": s.stepView(ctx, t, e)}
	p.Err = unconfiguredCause(t, e)
	return p
}

// unconfiguredCause is the UnconfiguredError of every tool_not_configured
// Resolve answers: that of a tool mid-configuration (unconfigured) and of
// one whose OAuth grant a refresh found revoked (notConfigured) alike.
func unconfiguredCause(t *store.Tool, e *catalog.Entry) *UnconfiguredError {
	return &UnconfiguredError{ID: t.ID, Name: cmp.Or(t.Name, e.Name)}
}

// UnconfiguredError is the cause of Resolve's tool_not_configured: which
// tool, and its name, for a caller that names tools even while they are
// not configured (the agent endpoint keeps such a tool's MCP name, so that
// no other tool takes it over).
type UnconfiguredError struct {
	ID   int64
	Name string // the tool's own name, else its catalog entry's
}

func (e *UnconfiguredError) Error() string {
	return fmt.Sprintf("toolconfig: tool %d (%s) is not configured", e.ID, e.Name)
}

// AtHand is what Resolve would answer when it can answer without waiting
// for anything (the tool is cached and no token refresh is due), and false
// when Resolve would have to ask the database or the token endpoint.
func (s *Service) AtHand(accountID, id int64) (*Resolved, bool) {
	r := s.cached(accountID, id)
	if r == nil || r.refreshDue(s.opts.Now()) {
		return nil, false
	}
	return r, true
}

// ResolveName finds the account's one connected tool made from the catalog
// entry name.
// A found name is cached like a resolved tool, so a call by name costs no
// database query either; this replica's creates and deletes drop it.
func (s *Service) ResolveName(ctx context.Context, accountID int64, name string) (int64, error) {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.names[accountID][name]
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.id, nil
	}
	since := s.epoch.Load()
	ts, err := s.opts.Store.ToolsByCatalogName(ctx, accountID, name)
	if err != nil {
		return 0, err
	}
	switch len(ts) {
	case 0:
		return 0, problem.Validation("The account has no connected tool of that name.", map[string]string{"tool": "no connected tool named " + problem.Quote(name)})
	case 1:
		if s.opts.CacheTTL > 0 {
			s.mu.Lock()
			// Unless a tool came or went while we read (remember): the
			// name may already be ambiguous or gone.
			if s.epoch.Load() == since {
				if s.names[accountID] == nil {
					s.names[accountID] = map[string]cachedName{}
				}
				s.names[accountID][name] = cachedName{id: ts[0].ID, expires: now.Add(s.opts.CacheTTL)}
			}
			s.mu.Unlock()
		}
		return ts[0].ID, nil
	default:
		return 0, problem.Validation("The account has several connected tools of that name; call it by its integer ID.",
			map[string]string{"tool": "several connected tools named " + name + "; use the integer ID"})
	}
}

func (s *Service) cached(accountID, id int64) *Resolved {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[toolKey{accountID, id}]
	if !ok {
		return nil
	}
	if time.Now().After(c.expires) {
		delete(s.cache, toolKey{accountID, id})
		return nil
	}
	return c.resolved
}

// Invalidate drops the cached copy of a tool on this replica.
func (s *Service) Invalidate(accountID, id int64) { s.invalidate(accountID, id) }

func (s *Service) invalidate(accountID, id int64) {
	s.mu.Lock()
	s.epoch.Add(1)
	delete(s.cache, toolKey{accountID, id})
	delete(s.names, accountID) // a tool came or went: names may now be ambiguous or gone
	s.mu.Unlock()
}
