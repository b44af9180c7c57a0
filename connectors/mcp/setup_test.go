package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// setup returns a Connector allowed to reach loopback, closed at cleanup.
func setup(t testing.TB, opts *Options) *Connector {
	t.Helper()
	o := Options{AllowPrivate: true}
	if opts != nil {
		o = *opts
	}
	c := New(&o)
	t.Cleanup(func() { c.Close() })
	return c
}

var customEntry = &catalog.Entry{Name: "custom-mcp", Type: catalog.TypeCustomMCP, Connector: "mcp"}

// toolFor returns a connected custom-mcp tool pointing at srv.
func toolFor(srv *mcptest.Server, id int64, config map[string]string) *connectors.Tool {
	cfg := map[string]string{"url": srv.URL}
	for k, v := range config {
		cfg[k] = v
	}
	return &connectors.Tool{ID: id, AccountID: 1, Entry: customEntry, Config: cfg, Version: 1}
}

// counterSetup starts a Counter server with srvOpts and returns it, a
// Connector with opts (as setup takes them) and a tool (ID 1) pointing at it.
func counterSetup(t testing.TB, srvOpts mcptest.Options, opts *Options) (*mcptest.Server, *Connector, *connectors.Tool) {
	t.Helper()
	srv := mcptest.Start(t, mcptest.Counter, srvOpts)
	return srv, setup(t, opts), toolFor(srv, 1, nil)
}

// wantRuns fails unless srv ran action runs times and initialized inits
// sessions.
func wantRuns(t testing.TB, srv *mcptest.Server, action string, runs, inits int) {
	t.Helper()
	if n := srv.Calls(action); n != runs {
		t.Errorf("%s ran %d times, want %d", action, n, runs)
	}
	if n := srv.Initializes(); n != inits {
		t.Errorf("initializes = %d, want %d", n, inits)
	}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func call(t testing.TB, c *Connector, tool *connectors.Tool, action, args string) (connectors.Result, error) {
	t.Helper()
	return c.Call(ctxFor(t, 10*time.Second), tool, action, json.RawMessage(args))
}

func mustCall(t testing.TB, c *Connector, tool *connectors.Tool, action, args string) connectors.Result {
	t.Helper()
	res, err := call(t, c, tool, action, args)
	if err != nil {
		t.Fatalf("Call(%s): %v", action, err)
	}
	return res
}

// wantKind fails unless err is a *connectors.Error of kind.
func wantKind(t testing.TB, err error, kind connectors.Kind) {
	t.Helper()
	if got := connectortest.Kind(t, err); got != kind {
		t.Fatalf("kind = %s, want %s (error: %v)", got, kind, err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}
