package toolconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// rekeyStore keeps tools in memory for RekeyStored.
type rekeyStore struct{ tools map[int64]store.Tool }

func (r *rekeyStore) ToolsWithSealed(_ context.Context, after int64, limit int) ([]store.Tool, error) {
	var out []store.Tool
	for id := after + 1; id <= int64(len(r.tools)) && len(out) < limit; id++ {
		out = append(out, r.tools[id])
	}
	return out, nil
}

func (r *rekeyStore) GetTool(_ context.Context, _, id int64) (*store.Tool, error) {
	t := r.tools[id]
	return &t, nil
}

func (r *rekeyStore) ResealTool(_ context.Context, t *store.Tool, want int64) error {
	if r.tools[t.ID].Version != want {
		return store.ErrConflict
	}
	r.tools[t.ID] = *t
	return nil
}

// TestRekeyStored: every value an old key sealed (secrets, an OAuth token,
// a discovered provider's sealed values in the configuration) is sealed
// again with the current key, the rest of the configuration byte for byte
// as it was; a tool with nothing of the old key's is not written; one
// changed under it three times is counted as left.
func TestRekeyStored(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, _ := secrets.New(oldKey)
	box, err := secrets.New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	config := `{"_discovered_oauth":{"client_id":"c","client_secret":"` + old.Seal([]byte("cs")) + `","scopes":["a","b"]},"n":12345678901234567890,"url":"https://x.test/mcp"}`
	current := box.Seal([]byte(`{"TAVILY_API_KEY":"new"}`))
	st := &rekeyStore{tools: map[int64]store.Tool{
		1: {ID: 1, Version: 3, Config: config, Secrets: old.Seal([]byte(`{"bearer_token":"b"}`)), OAuthToken: old.Seal([]byte(`{"access_token":"at"}`))},
		2: {ID: 2, Version: 1, Config: `{}`, Secrets: current},
		3: {ID: 3, Version: 1, Config: `{}`, Secrets: old.Seal([]byte(`{}`))},
	}}
	s := New(Options{Store: &racingStore{tools: map[int64]store.Tool{}}, Catalog: cat, Box: box})

	changed, left, err := s.RekeyStored(context.Background(), &conflictOn{st, 3})
	if err != nil || changed != 1 || left != 1 {
		t.Fatalf("RekeyStored = %d changed, %d left, %v; want 1 and 1", changed, left, err)
	}
	got := st.tools[1]
	for name, v := range map[string]string{"secrets": got.Secrets, "token": got.OAuthToken} {
		if box.Stale(v) {
			t.Errorf("%s still sealed with the old key", name)
		}
	}
	if pt, err := box.Open(got.OAuthToken); err != nil || string(pt) != `{"access_token":"at"}` {
		t.Errorf("token opens to %q, %v", pt, err)
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got.Config), &c); err != nil {
		t.Fatal(err)
	}
	if string(c["n"]) != "12345678901234567890" || string(c["url"]) != `"https://x.test/mcp"` {
		t.Errorf("the configuration's other values changed: %s", got.Config)
	}
	var d struct {
		ClientSecret string   `json:"client_secret"`
		Scopes       []string `json:"scopes"`
	}
	if err := json.Unmarshal(c["_discovered_oauth"], &d); err != nil || box.Stale(d.ClientSecret) || len(d.Scopes) != 2 {
		t.Errorf("discovered provider after: %s (%v)", c["_discovered_oauth"], err)
	}
	if pt, _ := box.Open(d.ClientSecret); string(pt) != "cs" {
		t.Errorf("client secret opens to %q", pt)
	}
	if st.tools[2].Secrets != current {
		t.Error("a tool sealed with the current key was written again")
	}
	if !box.Stale(st.tools[3].Secrets) {
		t.Error("the tool changed under the pass three times was written anyway")
	}
}

// conflictOn makes every write of one tool lose to a concurrent change.
type conflictOn struct {
	*rekeyStore
	id int64
}

func (c *conflictOn) ResealTool(ctx context.Context, t *store.Tool, want int64) error {
	if t.ID == c.id {
		return store.ErrConflict
	}
	return c.rekeyStore.ResealTool(ctx, t, want)
}
