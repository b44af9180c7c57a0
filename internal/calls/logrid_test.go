package calls_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/replaycache"
)

// TestWarningsOfACallCarryItsRequestID: the warnings a call logs about the
// replay cache failing and about an action's input schema that loops name
// the call's request ID, as every other line logged for a request does.
func TestWarningsOfACallCarryItsRequestID(t *testing.T) {
	t.Parallel()
	ctx := logging.WithRequestID(context.Background(), "rid-h4-warn")
	s, acct, row := toolInStore(t, storeModes()["sqlite"](t), "warnrid", `{"base_url":"x"}`)
	out := &lockedBuffer{}
	e := calls.New(calls.Options{Store: s, Tools: &cachingTools{s: &changingStore{Store: s, t: t}, conn: loopConnector{}},
		Cache: brokenCache{}, Logger: logging.New(out, "debug"),
		CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
	body := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {"q": 1}}`, row.ID))
	resp, err := e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: "warn", HasKey: true})
	if err != nil || resp.Status != 200 {
		t.Fatalf("the call: %s, %v, want 200", show(resp), err)
	}
	for _, msg := range []string{"replay cache unavailable", "input schema applies itself"} {
		found := false
		for line := range strings.SplitSeq(out.String(), "\n") {
			if strings.Contains(line, msg) {
				found = true
				if !strings.Contains(line, `"request_id":"rid-h4-warn"`) {
					t.Errorf("the line %q has no request_id", line)
				}
			}
		}
		if !found {
			t.Errorf("no line says %q; the log:\n%s", msg, out.String())
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// brokenCache is a replay cache that is never reachable.
type brokenCache struct{}

var errCacheDown = errors.New("cache down")

func (brokenCache) Begin(context.Context, int64, string, []byte, string, time.Duration) (replaycache.BeginResult, error) {
	return replaycache.BeginResult{}, errCacheDown
}
func (brokenCache) Finish(context.Context, int64, string, *replaycache.Entry, time.Duration) error {
	return errCacheDown
}
func (brokenCache) Unlock(context.Context, int64, string, string) error { return errCacheDown }
func (brokenCache) Ping(context.Context) error                          { return errCacheDown }

// loopConnector offers one action, send, whose input schema applies itself
// to the same value endlessly.
type loopConnector struct{}

func (loopConnector) Actions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return []connectors.Action{{Name: "send", InputSchema: json.RawMessage(`{"$ref":"#/$defs/X","$defs":{"X":{"$ref":"#/$defs/X"}}}`)}}, nil
}

func (loopConnector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	return connectors.Result{Content: json.RawMessage(`{"sent":true}`)}, nil
}
