package accounts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

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
	svc := accounts.New(s, 0, nil)
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

// countingStore is the real store, counting the lookups that reach it.
type countingStore struct {
	*store.Store
	lookups int
}

func (c *countingStore) KeyByHash(ctx context.Context, hash string) (int64, string, error) {
	c.lookups++
	return c.Store.KeyByHash(ctx, hash)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// A key the store does not know is refused from the cache for the TTL, so
// a client retrying a revoked key in a loop costs one lookup per TTL; and a
// flood of unknown keys does not push the keys in use out of the cache.
func TestUnknownKeysAreRememberedForTheTTL(t *testing.T) {
	ctx := context.Background()
	cs := &countingStore{Store: openStore(t)}
	const ttl = time.Minute
	svc := accounts.New(cs, ttl, nil)
	clock := time.Now()
	accounts.SetClock(svc, func() time.Time { return clock })
	key, _, err := svc.CreateKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	unknown := accounts.KeyPrefix + strings.Repeat("A", 40)

	for i := 0; i < 3; i++ {
		if _, err := svc.Principal(ctx, unknown); !errors.Is(err, accounts.ErrUnknownKey) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if cs.lookups != 1 {
		t.Fatalf("three tries of an unknown key made %d store lookups, want 1", cs.lookups)
	}
	clock = clock.Add(ttl + time.Second)
	if _, err := svc.Principal(ctx, unknown); !errors.Is(err, accounts.ErrUnknownKey) || cs.lookups != 2 {
		t.Fatalf("after the TTL: %v, %d lookups; want ErrUnknownKey and a second lookup", err, cs.lookups)
	}

	// A TTL the flood cannot outlast, however slow the machine.
	long := accounts.New(cs, time.Hour, nil)
	if _, err := long.Principal(ctx, key); err != nil {
		t.Fatal(err)
	}
	before := cs.lookups
	for i := 0; i <= 10_000; i++ {
		guess := fmt.Sprintf("%s%040d", accounts.KeyPrefix, i)
		if _, err := long.Principal(ctx, guess); !errors.Is(err, accounts.ErrUnknownKey) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	if cs.lookups != before+10_001 {
		t.Fatalf("10001 distinct guesses made %d lookups", cs.lookups-before)
	}
	before = cs.lookups
	if _, err := long.Principal(ctx, key); err != nil || cs.lookups != before {
		t.Fatalf("the key in use after a flood of guesses: %v, %d more lookups; want it still cached", err, cs.lookups-before)
	}

	// Revoked here: forgotten at once, then refused from the cache.
	if err := svc.Revoke(ctx, key); err != nil {
		t.Fatal(err)
	}
	before = cs.lookups
	for i := 0; i < 3; i++ {
		if _, err := svc.Principal(ctx, key); !errors.Is(err, accounts.ErrUnknownKey) {
			t.Fatalf("revoked key: %v", err)
		}
	}
	if cs.lookups != before+1 {
		t.Fatalf("three tries of a revoked key made %d lookups, want 1", cs.lookups-before)
	}
}

// A key whose stored scope this server does not know is refused, and the
// refusal is logged with the account and scope, never the key.
func TestUnknownScopeIsRefusedAndLogged(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var logs bytes.Buffer
	svc := accounts.New(s, time.Minute, slog.New(slog.NewJSONHandler(&logs, nil)))
	key, acct, err := svc.CreateKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Model(&store.APIKey{}).Where("key_hash = ?", accounts.Hash(key)).Update("scope", "admin").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Principal(ctx, key); !errors.Is(err, accounts.ErrUnknownKey) {
		t.Fatalf("a key of scope admin: %v, want ErrUnknownKey", err)
	}
	line := logs.String()
	if !strings.Contains(line, `"scope":"admin"`) || !strings.Contains(line, fmt.Sprintf(`"account_id":%d`, acct.ID)) || !strings.Contains(line, `"level":"WARN"`) {
		t.Fatalf("log = %s, want a WARN line with the account and scope", line)
	}
	if strings.Contains(line, key) || strings.Contains(line, accounts.Hash(key)) {
		t.Fatalf("log holds the key or its hash: %s", line)
	}
}
