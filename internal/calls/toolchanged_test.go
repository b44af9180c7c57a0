package calls_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// TestKeyedCallWhoseToolKeepsChanging: a keyed call's reservation that
// finds its tool at another version than this replica cached resolves the
// tool again and runs on it; when the tool has changed again by the second
// reservation, the call answers 503 unavailable (Retry-After 1) with nothing
// sent, no call logged and the key left free, so the same call run again
// once the tool holds still runs, once. The tool changes for real: a store
// wrapper reconfigures the tool's row right before each Reserve, which then
// reads another version in the database than the one the call resolved.
func TestKeyedCallWhoseToolKeepsChanging(t *testing.T) {
	t.Parallel()
	for name, opts := range storeModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, acct, row := toolInStore(t, opts(t), "toolchanged", `{"base_url":"config-0"}`)
			st := &changingStore{Store: s, t: t}
			conn := &sendConnector{}
			tools := &cachingTools{s: st, conn: conn}
			e := calls.New(calls.Options{Store: st, Tools: tools, Cache: replaycache.NewMemory(),
				CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
			callBody := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {"to": "x"}}`, row.ID))
			call := func(key string) (*calls.Response, error) {
				return e.Call(ctx, calls.Request{AccountID: acct.ID, Body: callBody, Key: key, HasKey: true})
			}
			logged := func() []store.CallLog {
				cs, _, err := e.Calls(ctx, acct.ID, &row.ID, store.Page{Limit: 50, List: fmt.Sprintf("calls?tool=%d", row.ID)})
				if err != nil {
					t.Fatal(err)
				}
				return cs
			}

			// Warm this replica's cache at the tool's first version.
			if _, err := tools.Resolve(ctx, acct.ID, row.ID); err != nil {
				t.Fatal(err)
			}

			// Changed before each of the two reservations: 503, nothing sent.
			st.changes.Store(2)
			resp, err := call("changing")
			p, ok := problem.As(err)
			if !ok || resp != nil {
				t.Fatalf("a call whose tool changed twice: %s, %v, want a 503 problem", show(resp), err)
			}
			const msg = "The tool changed while this call was getting ready; nothing was sent. Retry."
			if p.Code != problem.Unavailable || p.HTTPStatus() != 503 || p.RetryAfter != 1 || p.Message != msg {
				t.Fatalf("a call whose tool changed twice: %d %s retry_after=%d %q, want 503 unavailable retry_after=1 %q",
					p.HTTPStatus(), p.Code, p.RetryAfter, p.Message, msg)
			}
			if n := st.reserves.Load(); n != 2 {
				t.Fatalf("a call whose tool changed twice reserved %d times, want 2", n)
			}
			if n := tools.invalidated.Load(); n != 1 {
				t.Fatalf("a call whose tool changed twice invalidated it %d times, want 1", n)
			}
			if got := conn.sent(); len(got) != 0 {
				t.Fatalf("a call whose tool changed twice was sent to the tool: %v", got)
			}
			if _, err := s.GetIdem(ctx, acct.ID, "changing"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the key of a call whose tool changed twice: %v, want no row (free)", err)
			}
			if _, err := e.Key(ctx, acct.ID, "changing"); err == nil {
				t.Fatal("the key of a call whose tool changed twice is known, want 404 (free)")
			}
			if cs := logged(); len(cs) != 0 {
				t.Fatalf("a call whose tool changed twice is in the call log: %+v", cs)
			}

			// The same key and body, the tool still now: it runs, once, on
			// the tool as it is.
			resp, err = call("changing")
			if err != nil || resp.Status != 200 || resp.Replayed {
				t.Fatalf("the retry once the tool is still: %s, %v, want a first 200", show(resp), err)
			}
			if got := conn.sent(); len(got) != 1 || got[0] != "config-2@3" {
				t.Fatalf("the retry once the tool is still sent %v, want [config-2@3]", got)
			}
			if r, err := s.GetIdem(ctx, acct.ID, "changing"); err != nil || r.State != store.IdemSucceeded {
				t.Fatalf("the retry's key: %+v, %v, want succeeded", r, err)
			}
			if cs := logged(); len(cs) != 1 || cs[0].Outcome != "succeeded" || cs[0].IdempotencyKey == nil || *cs[0].IdempotencyKey != "changing" {
				t.Fatalf("the call log after the retry: %+v, want one succeeded call with key \"changing\"", cs)
			}

			// Changed before the first reservation only: resolved again and
			// run once, on the new version.
			st.changes.Store(1)
			st.reserves.Store(0)
			tools.invalidated.Store(0)
			resp, err = call("changed-once")
			if err != nil || resp.Status != 200 {
				t.Fatalf("a call whose tool changed once: %s, %v, want 200", show(resp), err)
			}
			var answer struct {
				IsError bool            `json:"is_error"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(resp.Body, &answer); err != nil || answer.IsError || string(answer.Result) != `{"ran_on":"config-3@4"}` {
				t.Fatalf("a call whose tool changed once answered %s (%v), want the result of the tool at version 4", resp.Body, err)
			}
			if got := conn.sent(); len(got) != 2 || got[1] != "config-3@4" {
				t.Fatalf("a call whose tool changed once: the tool got %v, want one more call, on [config-3@4]", got)
			}
			if n, m := st.reserves.Load(), tools.invalidated.Load(); n != 2 || m != 1 {
				t.Fatalf("a call whose tool changed once reserved %d times and invalidated %d times, want 2 and 1", n, m)
			}
			if cs := logged(); len(cs) != 2 || cs[1].Outcome != "succeeded" || cs[1].IdempotencyKey == nil || *cs[1].IdempotencyKey != "changed-once" {
				t.Fatalf("the call log after a call whose tool changed once: %+v", cs)
			}
		})
	}
}

// storeModes are the stores an engine test runs on.
func storeModes() map[string]func(t *testing.T) store.Options {
	return map[string]func(t *testing.T) store.Options{
		"sqlite":   func(t *testing.T) store.Options { return store.Options{DataDir: t.TempDir()} },
		"postgres": func(t *testing.T) store.Options { return store.Options{DatabaseURL: testdb.Postgres(t, "calls")} },
	}
}

// toolInStore opens and migrates a store, and makes an account named
// account with one configured http-request tool of the given config.
func toolInStore(t *testing.T, opts store.Options, account, config string) (*store.Store, *store.Account, *store.Tool) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := s.EnsureAccount(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	row := &store.Tool{AccountID: acct.ID, CatalogName: "http-request", Name: "http-request", State: "configured", Config: config}
	if err := s.CreateTool(ctx, row); err != nil {
		t.Fatal(err)
	}
	return s, acct, row
}

// show is a response for a failure's message.
func show(r *calls.Response) string {
	if r == nil {
		return "no response"
	}
	return fmt.Sprintf("%d replayed=%t %s", r.Status, r.Replayed, r.Body)
}

// changingStore is the real store, with the call's tool reconfigured in the
// database right before each of the next changes reservations.
type changingStore struct {
	*store.Store
	t        *testing.T
	changes  atomic.Int32
	reserves atomic.Int32
	bumps    int
}

func (s *changingStore) Reserve(ctx context.Context, r *store.IdemRecord, lease, ttl time.Duration) (*store.IdemRecord, error) {
	s.reserves.Add(1)
	if s.changes.Add(-1) >= 0 {
		row, err := s.GetTool(ctx, r.AccountID, r.ToolID)
		if err != nil {
			s.t.Errorf("reading the tool to change it: %v", err)
			return nil, err
		}
		s.bumps++
		row.Config = fmt.Sprintf(`{"base_url":"config-%d"}`, s.bumps)
		if err := s.UpdateToolConfig(ctx, row, row.State, row.Version); err != nil {
			s.t.Errorf("changing the tool: %v", err)
			return nil, err
		}
	} else {
		s.changes.Store(0)
	}
	return s.Store.Reserve(ctx, r, lease, ttl)
}

// cachingTools resolves tools from the store and keeps each until
// Invalidate, as toolconfig.Service keeps them for QUIVER_CACHE_TTL: what
// it hands out is stale once the row changes.
type cachingTools struct {
	s           *changingStore
	conn        connectors.Connector
	mu          sync.Mutex
	cached      map[int64]*toolconfig.Resolved
	invalidated atomic.Int32
}

func (c *cachingTools) Resolve(ctx context.Context, accountID, id int64) (*toolconfig.Resolved, error) {
	if rt, ok := c.AtHand(accountID, id); ok {
		return rt, nil
	}
	row, err := c.s.GetTool(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	config := map[string]string{}
	if err := json.Unmarshal([]byte(row.Config), &config); err != nil {
		return nil, err
	}
	rt := &toolconfig.Resolved{Row: row, Connector: c.conn,
		Tool: &connectors.Tool{ID: row.ID, AccountID: row.AccountID, Config: config, Version: row.Version}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached == nil {
		c.cached = map[int64]*toolconfig.Resolved{}
	}
	c.cached[id] = rt
	return rt, nil
}

func (c *cachingTools) ResolveName(ctx context.Context, accountID int64, name string) (int64, error) {
	return 0, errors.New("cachingTools: no names")
}

func (c *cachingTools) AtHand(accountID, id int64) (*toolconfig.Resolved, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rt, ok := c.cached[id]
	return rt, ok && rt.Tool.AccountID == accountID
}

func (c *cachingTools) Invalidate(accountID, id int64) {
	c.invalidated.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cached, id)
}

// sendConnector offers one non-retryable action, send, and records each
// call as "base_url@version" of the tool it was sent on.
type sendConnector struct {
	mu    sync.Mutex
	calls []string
}

func (c *sendConnector) Actions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return []connectors.Action{{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (c *sendConnector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	ran := fmt.Sprintf("%s@%d", t.Config["base_url"], t.Version)
	c.mu.Lock()
	c.calls = append(c.calls, ran)
	c.mu.Unlock()
	return connectors.Result{Content: json.RawMessage(fmt.Sprintf(`{"ran_on":%q}`, ran))}, nil
}

func (c *sendConnector) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}
