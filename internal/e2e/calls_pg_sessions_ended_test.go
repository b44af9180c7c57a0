package e2e

import (
	"bytes"
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

// TestPostgresEndsSessionsUnderLoad: two quiver serve replicas on one
// Postgres and a Redis of the test's own. Postgres ends every session of
// the replicas' pools (pg_terminate_backend, as a failover or a pooler
// restart does) while Postgres itself stays up:
//
//   - right after, a new keyed call on each replica runs and answers 200,
//     not 503: the replicas' pools give up their dead connections rather
//     than fail a call on each; so do a key's first request and a list;
//   - under keyed load with duplicates racing on both replicas, while the
//     sessions are ended again and again and Redis is killed and started
//     empty, each key's tool call runs at most once, every 200 of a key is
//     the same bytes, every answer is a documented one, and once the load
//     ends every key is succeeded (replayed by both replicas) or still free
//     (its call then runs once), and none is left in progress.
func TestPostgresEndsSessionsUnderLoad(t *testing.T) {
	ctx := context.Background()
	rs := startRedis(t)
	dbURL := testdb.Postgres(t, "sessend")
	env := procEnv(t, dbURL, "redis://"+rs.Addr+"/0")
	env["QUIVER_DB_MAX_CONNS"] = "6"
	// The key and the tool stay cached through the first part, so that a
	// call's first statement is its reservation, which meets a dead
	// connection first; then a key not yet used makes the key's read the
	// first, and a list the list's.
	env["QUIVER_CACHE_TTL"] = "1m"
	key := createKey(t, env, "sessend")
	fresh := createKey(t, env, "sessend")
	tool := startToolServer(t)
	procs := []*proc{startProc(t, env), startProc(t, env)}
	id := connectHTTPTool(t, procs[0].URL, key, tool.URL)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	var adminMu sync.Mutex
	// endSessions ends every session of the replicas' and returns the
	// pool sessions' pids.
	endSessions := func() []int32 {
		adminMu.Lock()
		defer adminMu.Unlock()
		var pids []int32
		rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2`,
			dbName, store.WatchApplicationName)
		if err == nil {
			pids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
		if err != nil {
			t.Errorf("sessions: %v", err)
		}
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, dbName); err != nil {
			t.Errorf("terminate: %v", err)
		}
		return pids
	}
	call := func(p *proc, k string) *testserver.Response {
		return testserver.Do(t, p.URL, key, "POST", callPath, callBody(id, "/"+k, k), "Idempotency-Key", k)
	}

	// Every session in use a moment ago, then ended: the next call on each
	// replica meets its dead connections first.
	for i, p := range procs {
		for j := range 3 {
			if r := call(p, fmt.Sprintf("warm-%d-%d", i, j)); r.Status != 200 {
				t.Fatalf("warm-up: %d %s", r.Status, r.Body)
			}
		}
	}
	endAll := func() {
		pids := endSessions()
		// The pools' sessions gone: the ones ended, not every one, since a
		// replica's background work (its sweeps) may open a new one at once,
		// as the liveness watch does its own.
		testserver.Eventually(t, 10*time.Second, "the sessions to end", func() bool {
			var n int
			adminMu.Lock()
			defer adminMu.Unlock()
			err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&n)
			return err == nil && n == 0
		})
	}
	endAll()
	for i, p := range procs {
		k := fmt.Sprintf("after-%d", i)
		if r := call(p, k); r.Status != 200 {
			t.Fatalf("replica %d, first call after Postgres ended its sessions: %d %s", i, r.Status, r.Body)
		}
	}
	endAll()
	for i, p := range procs {
		if r := testserver.Do(t, p.URL, fresh, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 200 {
			t.Fatalf("replica %d, a key's first request after Postgres ended its sessions: %d %s", i, r.Status, r.Body)
		}
	}
	endAll()
	for i, p := range procs {
		if r := testserver.Do(t, p.URL, key, "GET", "/api/v1/agents/custom-tools/", nil); r.Status != 200 {
			t.Fatalf("replica %d, a list first after Postgres ended its sessions: %d %s", i, r.Status, r.Body)
		}
	}

	// Keyed load while the sessions end again and again and Redis dies.
	// The workers stop when the faults are over, or at keysEach keys.
	const workers, keysEach = 8, 100
	var mu sync.Mutex
	first := map[string][]byte{}
	var keys []string
	record := func(k string, r *testserver.Response) {
		switch {
		case r.Status == 200:
			mu.Lock()
			if f, ok := first[k]; ok && !bytes.Equal(f, r.Body) {
				t.Errorf("%s: two different 200s:\n%s\n%s", k, f, r.Body)
			} else if !ok {
				first[k] = r.Body
			}
			mu.Unlock()
		case r.Status == 409 && r.JSON()["error"] == "request_in_progress", r.Status == 503 && r.JSON()["error"] == "unavailable":
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("%s: %d %s without Retry-After", k, r.Status, r.Body)
			}
		case (r.Status == 409 || r.Status == 504) && r.JSON()["error"] == "tool_outcome_unknown":
		default:
			t.Errorf("%s: %d %s", k, r.Status, r.Body)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range keysEach {
				select {
				case <-done:
					return
				default:
				}
				k := fmt.Sprintf("load-%d-%d", w, i)
				mu.Lock()
				keys = append(keys, k)
				mu.Unlock()
				var race sync.WaitGroup
				for _, p := range procs {
					race.Go(func() { record(k, call(p, k)) })
				}
				race.Wait()
				record(k, call(procs[(w+i)%2], k))
			}
		})
	}
	for i := range 16 {
		time.Sleep(100 * time.Millisecond) // a pace for the faults, not a wait for an outcome
		endSessions()
		switch i {
		case 4:
			rs.stop()
		case 10:
			rs = startRedisAt(t, rs.Addr) // empty
		}
	}
	close(done)
	wg.Wait()

	for _, k := range keys {
		var state string
		testserver.Eventually(t, 15*time.Second, k+" to leave in_progress", func() bool {
			r := testserver.Do(t, procs[0].URL, key, "GET", "/api/v1/idempotency-keys/"+k, nil)
			switch {
			case r.Status == 404:
				state = "free"
			case r.Status == 200:
				state, _ = r.JSON()["state"].(string)
			default:
				state = fmt.Sprintf("%d %s", r.Status, r.Body)
			}
			return state != "in_progress"
		})
		ran := tool.count("/" + k)
		switch state {
		case "succeeded":
			for _, p := range procs {
				r := call(p, k)
				mu.Lock()
				f := first[k]
				mu.Unlock()
				if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" || (f != nil && !bytes.Equal(r.Body, f)) {
					t.Errorf("%s replayed by %s: %d %s, first %s", k, p.URL, r.Status, r.Body, f)
				}
			}
		case "free":
			mu.Lock()
			f := first[k]
			mu.Unlock()
			if ran != 0 || f != nil {
				t.Errorf("%s: free after the tool ran %d times (a 200: %v)", k, ran, f != nil)
			}
			if r := call(procs[1], k); r.Status != 200 {
				t.Errorf("%s: its call once the load ended: %d %s", k, r.Status, r.Body)
			}
			ran = tool.count("/" + k)
		case "outcome_unknown":
		default:
			t.Errorf("%s: key state %s", k, state)
		}
		if ran > 1 {
			t.Errorf("%s: the tool ran %d times", k, ran)
		}
	}
}
