package store_test

import (
	"context"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
)

// ToolsWithSealed pages through the tools of every account that hold a
// sealed value (secrets, an OAuth token, or one in the configuration), and
// ResealTool writes a tool's OAuth token too, at the version it read.
func TestToolsWithSealed(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "rekey")
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, tool := range []store.Tool{
				{Config: `{}`, Secrets: "v1:aaa"},
				{Config: `{"label":"nothing sealed"}`},
				{Config: `{}`, OAuthToken: "v1:bbb"},
				{Config: `{"_discovered_oauth":{"client_secret":"v1:ccc"}}`},
			} {
				tool.AccountID, tool.CatalogName, tool.Name, tool.State = acct.ID, "custom-mcp", "t", "configured"
				if err := s.CreateTool(ctx, &tool); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tool.ID)
			}
			var found []int64
			for after := int64(0); ; {
				ts, err := s.ToolsWithSealed(ctx, after, 2)
				if err != nil {
					t.Fatal(err)
				}
				if len(ts) == 0 {
					break
				}
				for _, tool := range ts {
					found, after = append(found, tool.ID), tool.ID
				}
			}
			if want := []int64{ids[0], ids[2], ids[3]}; len(found) != 3 || found[0] != want[0] || found[1] != want[1] || found[2] != want[2] {
				t.Errorf("ToolsWithSealed found %v, want %v", found, want)
			}

			before, err := s.GetTool(ctx, acct.ID, ids[2])
			if err != nil {
				t.Fatal(err)
			}
			resealed := *before
			resealed.OAuthToken = "v1:resealed"
			if err := s.ResealTool(ctx, &resealed, before.Version); err != nil {
				t.Fatal(err)
			}
			after, _ := s.GetTool(ctx, acct.ID, ids[2])
			if after.OAuthToken != "v1:resealed" || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("after ResealTool: %+v, want the token changed and nothing else (before %+v)", after, before)
			}
		})
	}
}
