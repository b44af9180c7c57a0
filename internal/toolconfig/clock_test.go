package toolconfig

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// downRefresher is a provider that is down: every refresh fails with an
// error that may pass.
type downRefresher struct{ asked int }

func (*downRefresher) AuthorizationURL(context.Context, *store.Tool, *catalog.Entry, *catalog.Step) (string, error) {
	return "", nil
}

func (d *downRefresher) Refresh(context.Context, int64, int64, string) (*store.Tool, error) {
	d.asked++
	return nil, errors.New("provider down")
}

func (*downRefresher) RefusedFresh(int64, string) {}

// TestTokenLifeByTheInjectedClock: whether a token is due for a refresh,
// and whether one a refresh could not replace still lives MinTokenLife, is
// judged by Options.Now, not the machine's clock: a token due a year from
// now is refreshed when the clock says so, and used while the provider is
// down until it is within MinTokenLife of its expiry.
func TestTokenLifeByTheInjectedClock(t *testing.T) {
	refreshAt := time.Now().Add(365 * 24 * time.Hour)
	expiry := refreshAt.Add(time.Minute)
	var now time.Time
	ref := &downRefresher{}
	s := New(Options{Store: &racingStore{tools: map[int64]store.Tool{}}, OAuth: ref,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	r := &Resolved{Tool: &connectors.Tool{AccessToken: "at"}, Row: &store.Tool{ID: 1, AccountID: 1, OAuthToken: "sealed"},
		refreshAt: refreshAt, expiry: expiry}

	for _, c := range []struct {
		name  string
		now   time.Time
		asked int
		used  bool
	}{
		{"not due", refreshAt.Add(-time.Second), 0, true},
		{"due, live", refreshAt.Add(time.Second), 1, true},
		{"due, about to expire", expiry.Add(-MinTokenLife + time.Millisecond), 2, false},
	} {
		now = c.now
		got, err := s.fresh(context.Background(), r)
		if ref.asked != c.asked {
			t.Fatalf("%s: the provider was asked %d times, want %d", c.name, ref.asked, c.asked)
		}
		if c.used && (err != nil || got != r) {
			t.Fatalf("%s: %v, %v; want the token used", c.name, got, err)
		}
		if p, ok := problem.As(err); !c.used && (!ok || p.Code != problem.ToolUnreachable) {
			t.Fatalf("%s: %v, want tool_unreachable", c.name, err)
		}
	}
}
