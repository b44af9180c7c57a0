package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
)

// ResealTool rewrites a tool's config and secrets only at the version it
// read, and leaves the version, so a writer that read the row before it (a
// token refresh waiting on its provider) still saves; ToolsWithPlainURLs
// pages through the tools of every account whose config holds a URL.
func TestResealTool(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "reseal")
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, config := range []string{`{"url":"https://x.test/s/k/mcp"}`, `{"label":"no url"}`, `{"base_url":"http://y.test/"}`} {
				tool := &store.Tool{AccountID: acct.ID, CatalogName: "custom-mcp", Name: "t", State: "configured", Config: config}
				if err := s.CreateTool(ctx, tool); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tool.ID)
			}
			var found []int64
			for after := int64(0); ; {
				ts, err := s.ToolsWithPlainURLs(ctx, after, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(ts) == 0 {
					break
				}
				found, after = append(found, ts[0].ID), ts[0].ID
			}
			if len(found) != 2 || found[0] != ids[0] || found[1] != ids[2] {
				t.Errorf("ToolsWithPlainURLs found %v, want %v", found, []int64{ids[0], ids[2]})
			}

			before, err := s.GetTool(ctx, acct.ID, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			resealed := *before
			resealed.Config, resealed.Secrets = `{}`, "sealed"
			if err := s.ResealTool(ctx, &resealed, before.Version); err != nil {
				t.Fatal(err)
			}
			after, _ := s.GetTool(ctx, acct.ID, ids[0])
			if after.Config != `{}` || after.Secrets != "sealed" || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("after ResealTool: %+v, want the config and secrets changed and nothing else (before %+v)", after, before)
			}
			if err := s.ResealTool(ctx, &resealed, before.Version+1); !errors.Is(err, store.ErrConflict) {
				t.Errorf("ResealTool at a version the row is not at: %v, want ErrConflict", err)
			}
			refreshed := *before
			refreshed.OAuthToken = "new-token"
			if err := s.UpdateToolConfig(ctx, &refreshed, before.State, before.Version); err != nil {
				t.Errorf("a writer that read the row before ResealTool: %v, want it saved", err)
			}
		})
	}
}
