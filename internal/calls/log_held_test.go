package calls_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
)

// TestListWaitsForEntriesAKeyedCallHolds: a keyless call's entry, taken
// from the queue by a keyed call to write ahead of its own, is neither
// queued nor written while that call's statement runs. A list in that
// moment waits for it, and shows the keyless call; a statement that stalls
// past the wait makes the list 503 unavailable rather than short, and once
// it is written both calls are listed, in the order they ended.
func TestListWaitsForEntriesAKeyedCallHolds(t *testing.T) {
	t.Parallel()
	for name, opts := range storeModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, acct, row := toolInStore(t, opts(t), "logheld", `{"base_url":"x"}`)
			st := &stallingStore{changingStore: &changingStore{Store: s, t: t}}
			tools := &cachingTools{s: st.changingStore, conn: readConnector{}}
			e := calls.New(calls.Options{Store: st, Tools: tools, Cache: replaycache.NewMemory(),
				CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
			body := []byte(fmt.Sprintf(`{"tool": %d, "action": "read", "arguments": {}}`, row.ID))
			call := func(key string) string {
				t.Helper()
				resp, err := e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: key, HasKey: key != ""})
				if err != nil || resp.Status != 200 {
					t.Errorf("call (key %q): %s, %v", key, show(resp), err)
					return ""
				}
				var answer struct {
					CallID string `json:"call_id"`
				}
				if err := json.Unmarshal(resp.Body, &answer); err != nil || answer.CallID == "" {
					t.Errorf("call (key %q) answered %s", key, resp.Body)
				}
				return answer.CallID
			}
			list := func() ([]string, error) {
				cs, _, err := e.Calls(ctx, acct.ID, nil, store.Page{Limit: 50, List: "calls"})
				var ids []string
				for _, c := range cs {
					ids = append(ids, c.CallID)
				}
				return ids, err
			}

			// keyed runs a keyed call whose statement waits for release,
			// once it holds what was queued; it returns when the call does.
			keyed := func(key string, release <-chan struct{}) <-chan string {
				st.arm(release)
				done := make(chan string, 1)
				go func() { done <- call(key) }()
				select {
				case <-st.entered:
				case <-time.After(5 * time.Second):
					t.Fatal("the keyed call never wrote the queued entry with its own")
				}
				return done
			}

			// Released while the list waits: the list shows the keyless call.
			first := call("")
			release := make(chan struct{})
			k1 := keyed("k1", release)
			time.AfterFunc(30*time.Millisecond, func() { close(release) })
			ids, err := list()
			if err != nil || len(ids) == 0 || ids[0] != first {
				t.Fatalf("a list while a keyed call holds keyless call %s's entry: %v, %v; want it listed first", first, ids, err)
			}
			k1ID := <-k1

			// Stalled past the wait: 503, then everything once written.
			second := call("")
			release = make(chan struct{})
			k2 := keyed("k2", release)
			if ids, err := list(); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrWritesInFlight) {
				t.Fatalf("a list while a keyed call's statement stalls: %v, %v; want ErrUnavailable and ErrWritesInFlight", ids, err)
			}
			close(release)
			k2ID := <-k2
			ids, err = list()
			if want := []string{first, k1ID, second, k2ID}; err != nil || fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Fatalf("the call log: %v, %v; want %v", ids, err, want)
			}
		})
	}
}

// stallingStore holds the next Complete that writes earlier entries until
// the channel arm gave it is closed, and says so on entered.
type stallingStore struct {
	*changingStore
	entered chan struct{}
	release <-chan struct{}
}

func (s *stallingStore) arm(release <-chan struct{}) {
	s.entered, s.release = make(chan struct{}), release
}

func (s *stallingStore) Complete(ctx context.Context, accountID int64, key, token string, status int, contentType string, body []byte, entry *store.CallLog, earlier ...store.CallLog) (bool, error) {
	if len(earlier) > 0 && s.release != nil {
		release := s.release
		s.release = nil
		close(s.entered)
		<-release
	}
	return s.changingStore.Complete(ctx, accountID, key, token, status, contentType, body, entry, earlier...)
}

// readConnector offers one read-only action, read.
type readConnector struct{}

func (readConnector) Actions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return []connectors.Action{{Name: "read", Retryable: true, InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (readConnector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	return connectors.Result{Content: json.RawMessage(`{"ok":true}`)}, nil
}
