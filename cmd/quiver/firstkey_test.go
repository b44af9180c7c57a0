package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/app"
	"github.com/quiverhq/quiver/internal/config"
)

// The first key is made and shown whole even when a signal has already
// ended the context: cut between its two writes, it left an account that
// no later start made a key for.
func TestFirstKeyOutlivesASignal(t *testing.T) {
	a := embeddedApp(t)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the signal came first
	var out bytes.Buffer
	if err := firstKey(ctx, a.Accounts, &out); err != nil {
		t.Fatalf("firstKey: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	key := lines[len(lines)-1]
	if _, err := a.Accounts.Resolve(context.Background(), key); err != nil {
		t.Fatalf("the key shown (%q) does not resolve: %v", key, err)
	}

	out.Reset()
	if err := firstKey(context.Background(), a.Accounts, &out); err != nil || out.Len() != 0 {
		t.Fatalf("a second start: %v, printed %q; want nothing", err, out.String())
	}
}

// A first start cut between the account and its key (a crash) left an
// account without a key; the next start makes the key and shows it.
func TestFirstKeyAfterAStartCutShort(t *testing.T) {
	a := embeddedApp(t)
	if _, err := a.Store.EnsureAccount(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := firstKey(context.Background(), a.Accounts, &out); err != nil {
		t.Fatalf("firstKey: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if _, err := a.Accounts.Resolve(context.Background(), lines[len(lines)-1]); err != nil {
		t.Fatalf("no working key shown (%q): %v", out.String(), err)
	}
}

// embeddedApp is an App on an embedded database of the test's own.
func embeddedApp(t *testing.T) *app.App {
	t.Helper()
	env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
	cfg, err := config.Parse(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}
