package accounts_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/store"
)

func TestKeysAreStoredOnlyAsHashes(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	svc := accounts.New(s, 0)
	key, acct, err := svc.CreateKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, accounts.KeyPrefix) || !accounts.WellFormed(key) {
		t.Fatalf("key %q lacks the prefix or shape", key)
	}
	var rows []store.APIKey
	if err := s.DB().Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].KeyHash != accounts.Hash(key) || strings.Contains(rows[0].KeyHash+rows[0].Prefix, key) {
		t.Fatalf("stored key row %+v holds more than a hash and a short prefix", rows)
	}
	p, err := svc.Principal(ctx, key)
	if err != nil || p.Account != acct.ID || p.ReadOnly {
		t.Fatalf("Principal = %+v, %v", p, err)
	}
	ro, _, _ := svc.CreateReadOnlyKey(ctx, "acme")
	if p, _ := svc.Principal(ctx, ro); !p.ReadOnly || p.Account != acct.ID {
		t.Fatalf("read-only key resolves to %+v", p)
	}
	for _, bad := range []string{"", "qv_short", strings.Replace(key, "qv_", "xx_", 1), key + "x", accounts.KeyPrefix + strings.Repeat("!", 40)} {
		if _, err := svc.Principal(ctx, bad); !errors.Is(err, accounts.ErrUnknownKey) {
			t.Errorf("Principal(%q) = %v, want ErrUnknownKey", bad, err)
		}
	}
	if err := svc.Revoke(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Principal(ctx, key); !errors.Is(err, accounts.ErrUnknownKey) {
		t.Fatalf("revoked key still resolves: %v", err)
	}
}
