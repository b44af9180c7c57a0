package main

import (
	"bytes"
	"context"
	"io"
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
	env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
	cfg, err := config.Parse(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

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
