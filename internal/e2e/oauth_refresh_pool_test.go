package e2e

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthRefusedRefreshesOnASmallPool: on Postgres with the smallest
// pool QUIVER_DB_MAX_CONNS allows, as many tools as the pool has
// connections, whose grants the user revoked at the provider, are called
// at once, each needing a refresh, and the provider refuses each with
// invalid_grant only once all of them are waiting for it. Every call is
// 409 tool_not_configured with its tool's oauth step within a few seconds,
// and every tool is back at that step. A refused refresh used to read its
// tool again on a second connection while its row lock held the first, so
// a pool's worth of refusals at once waited for one another until their
// deadline (25 s), could not store the tools back at their oauth steps
// either, and answered 5xx.
func TestOAuthRefusedRefreshesOnASmallPool(t *testing.T) {
	const pool = config.MinDBMaxConns
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = 2*time.Second, time.Hour
	// Each refresh is let through to the provider once all of them have
	// arrived (or after 5 s, should fewer ever get that far at once).
	var arrived atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = oacTokenProxy(t, p.URL+"/token", func(_ http.ResponseWriter, form url.Values) bool {
		if form.Get("grant_type") == "refresh_token" {
			if arrived.Add(1) >= pool {
				once.Do(func() { close(all) })
			}
			select {
			case <-all:
			case <-time.After(5 * time.Second):
			}
		}
		return false
	})
	env["QUIVER_DB_MAX_CONNS"] = strconv.Itoa(pool)
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: env})

	ids := make([]int64, pool)
	for i := range ids {
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
			t.Fatalf("callback %d: %d %s", i, status, body)
		}
		ids[i] = id
	}
	// The last connection's access token has expired: every call must
	// refresh before it runs.
	time.Sleep(p.firstTTL + 200*time.Millisecond)
	p.revokeGrant()

	began := time.Now()
	answers := make([]*testserver.Response, len(ids))
	took := make([]time.Duration, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = oaCall(t, srv, id, "read_count")
			took[i] = time.Since(began)
		}()
	}
	wg.Wait()
	for i, r := range answers {
		next, _ := r.JSON()["next_configuration_step"].(map[string]any)
		if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" {
			t.Errorf("call %d of %d at once on a pool of %d, grant revoked: %d %s after %s, want 409 tool_not_configured with the oauth step",
				i, len(ids), pool, r.Status, r.Body, took[i].Round(100*time.Millisecond))
		} else if took[i] > 10*time.Second {
			t.Errorf("call %d of %d at once on a pool of %d: 409 after %s, want within a few seconds", i, len(ids), pool, took[i].Round(100*time.Millisecond))
		}
	}
	if n := arrived.Load(); n < int64(len(ids)) {
		t.Errorf("the provider was asked for %d refreshes, want %d", n, len(ids))
	}
	for i, id := range ids {
		if oaConfigured(t, srv, srv.Key, id) {
			t.Errorf("tool %d is still configured after its grant was refused", i)
		}
	}
}
