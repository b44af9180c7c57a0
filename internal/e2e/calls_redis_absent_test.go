package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestRedisAbsentAtStartThenBackThenGone: two quiver serve replicas on one
// Postgres are given a Redis that is not running when they start, comes
// up later (and is used), and dies again. Through all three, duplicates of each key sent
// at once to both replicas run the tool once, and every replica replays
// the outcome byte for byte, with its Content-Type, Idempotent-Replayed
// and a fresh X-Request-Id: the guarantees rest on Postgres alone.
func TestRedisAbsentAtStartThenBackThenGone(t *testing.T) {
	redisAddr := freeAddr(t) // nothing listens there yet
	env := procEnv(t, testdb.Postgres(t, "redisabsent"), "redis://"+redisAddr+"/0")
	key := createKey(t, env, "redisabsent")
	tool := startToolServer(t)
	procs := []*proc{startProc(t, env), startProc(t, env)}
	id := connectHTTPTool(t, procs[0].URL, key, tool.URL)

	var mu sync.Mutex
	firsts := map[string]*testserver.Response{}
	call := func(p *proc, k string, i int) *testserver.Response {
		return testserver.Do(t, p.URL, key, "POST", callPath, callBody(id, fmt.Sprintf("/slow/%s?ms=100", k), i), "Idempotency-Key", k)
	}
	// round sends 4 duplicates of each of 5 new keys, split across the
	// replicas, then replays each key on both.
	round := func(tag string) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 5 {
			for d := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k := fmt.Sprintf("%s-%d", tag, i)
					r := call(procs[(i+d)%2], k, i)
					switch {
					case r.Status == 200:
						mu.Lock()
						if f := firsts[k]; f != nil && !bytes.Equal(f.Body, r.Body) {
							t.Errorf("%s: two different 200s", k)
						} else if f == nil {
							firsts[k] = r
						}
						mu.Unlock()
					case r.Status == 409 && r.JSON()["error"] == "request_in_progress":
						if r.Header.Get("Retry-After") == "" {
							t.Errorf("%s: request_in_progress without Retry-After", k)
						}
					default:
						t.Errorf("%s: %d %s", k, r.Status, r.Body)
					}
				}()
			}
		}
		wg.Wait()
		for i := range 5 {
			k := fmt.Sprintf("%s-%d", tag, i)
			for _, p := range procs {
				var r *testserver.Response
				testserver.Eventually(t, 5*time.Second, k+"'s outcome", func() bool {
					r = call(p, k, i)
					return r.Status == 200
				})
				mu.Lock()
				f := firsts[k]
				if f == nil {
					firsts[k], f = r, r
				}
				mu.Unlock()
				if !bytes.Equal(r.Body, f.Body) || r.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
					r.Header.Get("Idempotent-Replayed") != "true" || r.Header.Get("X-Request-Id") == "" ||
					r.Header.Get("X-Request-Id") == f.Header.Get("X-Request-Id") {
					t.Errorf("%s replayed by %s: %d %v %s", k, p.URL, r.Status, r.Header, r.Body)
				}
			}
		}
	}

	round("absent")
	rs := startRedisAt(t, redisAddr)
	// Each replica skips Redis for a moment after an error: the first
	// keys may or may not meet it, which is the point.
	round("back")
	// Once their pause after its errors ends, the replicas use it again:
	// replays put outcomes there (this Redis is the test's own).
	testserver.Eventually(t, 10*time.Second, "outcomes to reach Redis", func() bool {
		for _, p := range procs {
			call(p, "back-0", 0)
		}
		out, err := execCommand("redis-cli", "-p", strings.Split(rs.Addr, ":")[1], "DBSIZE")
		return err == nil && strings.TrimSpace(string(out)) != "0"
	})
	round("absent") // the first keys again, now replayed with Redis up
	round("up")
	rs.stop()
	round("gone")
	if n, want := tool.total.Load(), int64(20); n != want {
		t.Errorf("the tool ran %d times for %d keys", n, want)
	}
}
