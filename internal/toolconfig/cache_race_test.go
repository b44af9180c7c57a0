package toolconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// memStore keeps tools in memory with conditional updates, and can hold
// one GetTool between reading a row and returning it: the moment a
// concurrent write can land while a read of the old row is under way.
type memStore struct {
	mu    sync.Mutex
	tools map[int64]store.Tool
	next  int64
	// hold, when set, is taken by the next GetTool: it reads the row,
	// closes read and waits on release before returning it.
	hold *heldRead
}

type heldRead struct{ read, release chan struct{} }

func (m *memStore) CreateTool(_ context.Context, t *store.Tool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	t.ID, t.Version = m.next, 1
	m.tools[t.ID] = *t
	return nil
}

func (m *memStore) GetTool(_ context.Context, accountID, id int64) (*store.Tool, error) {
	m.mu.Lock()
	t, ok := m.tools[id]
	h := m.hold
	m.hold = nil
	m.mu.Unlock()
	if h != nil {
		close(h.read)
		<-h.release
	}
	if !ok || t.AccountID != accountID {
		return nil, store.ErrNotFound
	}
	return &t, nil
}

func (m *memStore) ListTools(context.Context, int64, store.Page) ([]store.Tool, string, error) {
	return nil, "", nil
}

func (m *memStore) ToolsByCatalogName(_ context.Context, accountID int64, name string) ([]store.Tool, error) {
	m.mu.Lock()
	var out []store.Tool
	for _, t := range m.tools {
		if t.AccountID == accountID && t.CatalogName == name {
			out = append(out, t)
		}
	}
	h := m.hold
	m.hold = nil
	m.mu.Unlock()
	if h != nil {
		close(h.read)
		<-h.release
	}
	return out, nil
}

// holdNext makes the store's next read wait, once it has read, until
// the returned release is called; read is closed once it has.
func (m *memStore) holdNext() (read <-chan struct{}, release func()) {
	h := &heldRead{read: make(chan struct{}), release: make(chan struct{})}
	m.mu.Lock()
	m.hold = h
	m.mu.Unlock()
	return h.read, func() { close(h.release) }
}

func (m *memStore) UpdateToolConfig(_ context.Context, t *store.Tool, wantState string, wantVersion int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.tools[t.ID]
	if !ok || cur.State != wantState || cur.Version != wantVersion {
		return store.ErrConflict
	}
	t.Version = wantVersion + 1
	m.tools[t.ID] = *t
	return nil
}

func (m *memStore) DeleteTool(_ context.Context, _, id int64) (*store.Tool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tools[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	delete(m.tools, id)
	return &t, nil
}

func (m *memStore) DeleteOAuthStates(context.Context, int64) error { return nil }

type nopConnector struct{}

func (nopConnector) Actions(context.Context, *connectors.Tool) ([]connectors.Action, error) {
	return nil, nil
}

func (nopConnector) Call(context.Context, *connectors.Tool, string, json.RawMessage) (connectors.Result, error) {
	return connectors.Result{}, nil
}

// TestResolveRacingAWriteCachesNothingStale: a call that read a tool just
// before this replica reset or deleted it may use the old configuration
// (it was read first), but it must not leave that old row in the cache:
// every call after the reset or delete answered sees it at once. Before,
// the racing read cached the old row after the write had invalidated it,
// and for QUIVER_CACHE_TTL the reset tool went on being called with its
// forgotten credentials, and the deleted one went on being called at all.
func TestResolveRacingAWriteCachesNothingStale(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []struct {
		name string
		do   func(s *Service, id int64) error
		want problem.Code
	}{
		{"reset", func(s *Service, id int64) error { _, err := s.Reset(context.Background(), 1, id); return err }, problem.ToolNotConfigured},
		{"delete", func(s *Service, id int64) error { return s.Delete(context.Background(), 1, id) }, problem.NotFound},
	} {
		t.Run(write.name, func(t *testing.T) {
			st := &memStore{tools: map[int64]store.Tool{}}
			s := New(Options{Store: st, Catalog: cat, Box: box, CacheTTL: time.Minute,
				Connectors: connectors.Registry{"tavily": nopConnector{}}})
			ctx := context.Background()
			v, err := s.Create(ctx, 1, "tavily", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Provide(ctx, 1, v.ID, map[string]json.RawMessage{"TAVILY_API_KEY": json.RawMessage(`"tvly-old"`)}); err != nil {
				t.Fatal(err)
			}
			read, release := st.holdNext()
			done := make(chan error, 1)
			go func() { _, err := s.Resolve(ctx, 1, v.ID); done <- err }()
			<-read // the call has read the configured row
			if err := write.do(s, v.ID); err != nil {
				t.Fatal(err)
			}
			release()
			if err := <-done; err != nil {
				t.Fatalf("the racing call: %v, want the configuration it read", err)
			}
			r, err := s.Resolve(ctx, 1, v.ID)
			if p, ok := problem.As(err); !ok || p.Code != write.want {
				key := ""
				if r != nil {
					key = r.Tool.Config["TAVILY_API_KEY"]
				}
				t.Fatalf("a call after the %s answered: %v (key %q), want %s", write.name, err, key, write.want)
			}
		})
	}
}

// TestResolveNameRacingACreateCachesNothingStale: a call by catalog name
// that found the account's one tool of that name just before this replica
// connected a second one must not cache the name as unambiguous: the next
// call by name is refused as ambiguous at once. Before, the racing read
// cached the one tool after the create had dropped the names, and for
// QUIVER_CACHE_TTL calls by name went on reaching the first tool.
func TestResolveNameRacingACreateCachesNothingStale(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	st := &memStore{tools: map[int64]store.Tool{}}
	s := New(Options{Store: st, Catalog: cat, CacheTTL: time.Minute})
	ctx := context.Background()
	if _, err := s.Create(ctx, 1, "browser", ""); err != nil {
		t.Fatal(err)
	}
	read, release := st.holdNext()
	done := make(chan error, 1)
	go func() { _, err := s.ResolveName(ctx, 1, "browser"); done <- err }()
	<-read
	if _, err := s.Create(ctx, 1, "browser", "second"); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the racing call: %v, want the one tool it read", err)
	}
	id, err := s.ResolveName(ctx, 1, "browser")
	if p, ok := problem.As(err); !ok || p.Code != problem.ValidationError {
		t.Fatalf("a call by name after the second tool was connected: tool %d, %v; want validation_error (ambiguous)", id, err)
	}
}
