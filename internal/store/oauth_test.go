package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
)

// FreshOAuthState finds, of a tool's states, the one its oauth step may
// show again: unused, sealed, made for the tool's version and step and the
// account, and expiring after the bound; of those the one that expires last.
func TestFreshOAuthState(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, _ := s.EnsureAccount(ctx, "fresh")
			tool := &store.Tool{AccountID: acct.ID, CatalogName: "github-mcp", Name: "gh", State: "awaiting_authorization", Config: "{}"}
			if err := s.CreateTool(ctx, tool); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			add := func(hash string, version int64, step int, left time.Duration, sealed string) {
				t.Helper()
				err := s.CreateOAuthState(ctx, &store.OAuthState{StateHash: hash, AccountID: acct.ID, ToolID: tool.ID,
					Verifier: "v-" + hash, SealedState: sealed, ToolVersion: version, StepIndex: step,
					CreatedAt: now, ExpiresAt: now.Add(left)})
				if err != nil {
					t.Fatal(err)
				}
			}
			fresh := func() string {
				t.Helper()
				st, err := s.FreshOAuthState(ctx, acct.ID, tool.ID, 3, 1, now.Add(5*time.Minute))
				if errors.Is(err, store.ErrNotFound) {
					return ""
				}
				if err != nil {
					t.Fatal(err)
				}
				if st.Verifier != "v-"+st.StateHash || st.SealedState != "s-"+st.StateHash || st.ToolVersion != 3 || st.StepIndex != 1 {
					t.Fatalf("state %+v", st)
				}
				return st.StateHash
			}
			if got := fresh(); got != "" {
				t.Fatalf("no states: %q", got)
			}
			add("near", 3, 1, 4*time.Minute, "s-near")       // too little left
			add("other-version", 2, 1, 9*time.Minute, "s-x") // the configuration before
			add("other-step", 3, 0, 9*time.Minute, "s-x")    // another step
			add("unsealed", 3, 1, 9*time.Minute, "")         // made before sealed_state
			if got := fresh(); got != "" {
				t.Fatalf("none fit: %q", got)
			}
			add("a", 3, 1, 6*time.Minute, "s-a")
			add("b", 3, 1, 8*time.Minute, "s-b")
			if got := fresh(); got != "b" {
				t.Fatalf("fresh = %q, want b (it expires last)", got)
			}
			if _, err := s.ConsumeOAuthState(ctx, "b", time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := fresh(); got != "a" {
				t.Fatalf("after b was consumed: %q, want a", got)
			}
			other, _ := s.EnsureAccount(ctx, "fresh-other")
			if _, err := s.FreshOAuthState(ctx, other.ID, tool.ID, 3, 1, now); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another account: %v, want ErrNotFound", err)
			}
			if err := s.DeleteOAuthStates(ctx, tool.ID); err != nil {
				t.Fatal(err)
			}
			if got := fresh(); got != "" {
				t.Fatalf("after the reset's delete: %q", got)
			}
		})
	}
}
