package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestDBMaxConns runs 40 concurrent keyed calls through a replica whose
// QUIVER_DB_MAX_CONNS is 4 and watches its database from outside: it never
// holds more than 4 sessions, and every call still succeeds, once. With
// the pool's default (32) the same load opens many more.
func TestDBMaxConns(t *testing.T) {
	dbURL := testdb.Postgres(t, "pool")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	env := procEnv(t, dbURL, "")
	env["QUIVER_DB_MAX_CONNS"] = "4"
	key := createKey(t, env, "pool")
	tool := startToolServer(t)
	p := startProc(t, env)
	id := connectHTTPTool(t, p.URL, key, tool.URL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	peak := make(chan int)
	go func() {
		most := 0
		for ctx.Err() == nil {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2`,
				dbName, store.WatchApplicationName).Scan(&n); err == nil {
				most = max(most, n)
			}
			time.Sleep(2 * time.Millisecond)
		}
		peak <- most
	}()

	const calls = 40
	var wg sync.WaitGroup
	answers := make([]int, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := testserver.Do(t, p.URL, key, "POST", callPath, callBody(id, fmt.Sprintf("/slow/%d?ms=20", i), i), "Idempotency-Key", fmt.Sprintf("pool-%d", i))
			answers[i] = r.Status
		}()
	}
	wg.Wait()
	cancel()
	most := <-peak
	for i, status := range answers {
		if status != 200 {
			t.Errorf("call %d: %d", i, status)
		}
	}
	if n := tool.count("/slow"); n != calls {
		t.Errorf("the tool ran %d times for %d calls", n, calls)
	}
	if most > 4 {
		t.Errorf("the replica held %d sessions to its database; QUIVER_DB_MAX_CONNS is 4", most)
	}
	if most == 0 {
		t.Error("no session was seen: the watch saw nothing")
	}
}
