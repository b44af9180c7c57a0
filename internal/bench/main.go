// Command bench is `make bench`: it starts Quiver on Postgres and Redis, a
// local no-op tool server and a bare Gin echo handler, drives each with a
// load generator on loopback, and prints first-call and replay throughput
// and latency next to the echo baseline measured in the same run.
//
// It only ever targets 127.0.0.1, and every loop is bounded by a duration.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/quiverhq/quiver/internal/app"
	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/httpserver"
)

func main() {
	dur := flag.Duration("duration", 5*time.Second, "how long each scenario runs")
	pgURL := flag.String("postgres", envOr("QUIVER_BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "admin URL of the Postgres server")
	redisURL := flag.String("redis", envOr("QUIVER_BENCH_REDIS", "redis://127.0.0.1:6379/0"), "Redis URL")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (server and load) to this file")
	only := flag.String("only", "", "run only scenarios whose name contains this (echo always runs)")
	flag.Parse()
	onlyScenario = *only
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*dur, *pgURL, *redisURL); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

var onlyScenario string

func want(name string) bool { return onlyScenario == "" || strings.Contains(name, onlyScenario) }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(dur time.Duration, adminURL, redisURL string) error {
	ctx := context.Background()
	dbURL, drop, err := createDatabase(ctx, adminURL)
	if err != nil {
		return err
	}
	defer drop()
	settle := settler(ctx, adminURL)

	echo := serve(echoHandler())
	minH, closeMin, err := minimalHandler(ctx, dbURL, redisURL)
	if err != nil {
		return err
	}
	defer closeMin()
	minimal := serve(minH)
	tool := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))

	q, key, toolID, err := startQuiver(ctx, dbURL, redisURL, tool)
	if err != nil {
		return err
	}

	body := func(i int64) []byte {
		return []byte(fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/noop","body":{"i":%d}}}`, toolID, i))
	}
	fmt.Printf("Quiver call endpoint vs a bare Gin echo handler, %v per scenario, loopback, %d CPUs\n\n", dur, runtimeCPUs())
	fmt.Printf("%-14s %5s %10s %9s %9s %9s\n", "scenario", "conns", "req/s", "p50", "p99", "×echo")
	for _, conns := range []int{64, 1} {
		echoRes := load(dur, conns, func(c *http.Client, i int64) (*http.Request, error) {
			return post(echo+"/echo", "", body(i))
		})
		var minRes result
		if want("first") {
			settle()
			minRes = load(dur, conns, func(c *http.Client, i int64) (*http.Request, error) {
				return post(minimal+"/minimal", "", body(i))
			})
		}
		var seq atomic.Int64
		var first, replay result
		if want("first") {
			settle()
			first = load(dur, conns, func(c *http.Client, i int64) (*http.Request, error) {
				n := seq.Add(1)
				return post(q+"/api/v1/agents/custom-tools/call/", key, body(n), "Idempotency-Key", fmt.Sprintf("first-%d-%d", conns, n))
			})
		}
		// First calls again while the call log is listed every 10 ms: a
		// page is read under a lock that holds off log writes (store's
		// settled), and keyed calls write theirs as they complete.
		var listed result
		if want("first-listed") {
			settle()
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					req, _ := http.NewRequest("GET", q+"/api/v1/agents/custom-tools/calls/?limit=50", nil)
					req.Header.Set("X-API-KEY", key)
					if resp, err := http.DefaultClient.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}()
			listed = load(dur, conns, func(c *http.Client, i int64) (*http.Request, error) {
				n := seq.Add(1)
				return post(q+"/api/v1/agents/custom-tools/call/", key, body(n), "Idempotency-Key", fmt.Sprintf("first-%d-%d", conns, n))
			})
			close(stop)
			<-done
		}
		// Replays: a fixed set of keys, each called once before.
		const replayKeys = 256
		if want("replay") {
			for n := int64(0); n < replayKeys; n++ {
				req, _ := post(q+"/api/v1/agents/custom-tools/call/", key, body(n), "Idempotency-Key", fmt.Sprintf("replay-%d-%d", conns, n))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			replay = load(dur, conns, func(c *http.Client, i int64) (*http.Request, error) {
				n := i % replayKeys
				return post(q+"/api/v1/agents/custom-tools/call/", key, body(n), "Idempotency-Key", fmt.Sprintf("replay-%d-%d", conns, n))
			})
		}
		for _, r := range []struct {
			name string
			res  result
		}{{"echo", echoRes}, {"minimal path", minRes}, {"first call", first}, {"first, listed", listed}, {"replay", replay}} {
			if len(r.res.lat) == 0 {
				continue
			}
			fmt.Printf("%-14s %5d %10.0f %9s %9s %8.3f×\n", r.name, conns, r.res.rps(), fmtDur(r.res.pct(50)), fmtDur(r.res.pct(99)), r.res.rps()/echoRes.rps())
			if r.name == "first call" && len(minRes.lat) > 0 {
				fmt.Printf("%-14s %5s %10s %9s %9s %8.3f× minimal path's throughput, %.2f× its p50\n", "", "", "", "", "",
					r.res.rps()/minRes.rps(), float64(r.res.pct(50))/float64(minRes.pct(50)))
			}
			if r.name == "first, listed" && len(first.lat) > 0 {
				fmt.Printf("%-14s %5s %10s %9s %9s %8.3f× first calls' throughput, %.2f× their p50, %.2f× their p99\n", "", "", "", "", "",
					r.res.rps()/first.rps(), float64(r.res.pct(50))/float64(first.pct(50)), float64(r.res.pct(99))/float64(first.pct(99)))
			}
			if r.res.errors > 0 {
				fmt.Printf("%-14s %5s %d errors (first: %s)\n", "", "", r.res.errors, r.res.firstErr)
			}
		}
	}
	return nil
}

func runtimeCPUs() int {
	n := 0
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "processor") {
			n++
		}
	}
	return n
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d.Microseconds())/1000) }

func post(url, key string, b []byte, hdr ...string) (*http.Request, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-API-KEY", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req, nil
}

func echoHandler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/echo", func(c *gin.Context) {
		b, _ := io.ReadAll(c.Request.Body)
		c.Data(200, "application/json; charset=utf-8", b)
	})
	return r
}

// serve serves h on a loopback port with the server Quiver's binary uses,
// so the baselines and Quiver are served alike.
func serve(h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go httpserver.New(h, nil).Serve(ln)
	return "http://" + ln.Addr().String()
}

// settler returns a function that puts Postgres in the same state before
// each scenario that writes: the previous scenario's dirty pages are
// flushed by a CHECKPOINT of their own, not by one that falls in the middle
// of the next measurement, and Quiver's call log has drained.
func settler(ctx context.Context, adminURL string) func() {
	return func() {
		if admin, err := pgx.Connect(ctx, adminURL); err == nil {
			admin.Exec(ctx, "CHECKPOINT")
			admin.Close(ctx)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func createDatabase(ctx context.Context, adminURL string) (string, func(), error) {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	name := fmt.Sprintf("quiver_bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	i := strings.LastIndex(adminURL, "/")
	j := strings.Index(adminURL[i:], "?")
	rest := ""
	if j >= 0 {
		rest = adminURL[i+j:]
	}
	return adminURL[:i] + "/" + name + rest, func() {
		admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	}, nil
}

func startQuiver(ctx context.Context, dbURL, redisURL, toolURL string) (base, key string, toolID int64, err error) {
	env := map[string]string{
		"DATABASE_URL":                dbURL,
		"REDIS_URL":                   redisURL,
		"QUIVER_REDIS_PREFIX":         fmt.Sprintf("quiverbench:%d:", time.Now().UnixNano()),
		"QUIVER_SECRET_KEY":           base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"QUIVER_EGRESS_ALLOW_PRIVATE": "true",
		"QUIVER_LOG_LEVEL":            "error",
		"QUIVER_DATA_DIR":             os.TempDir(),
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cfg, err := config.Parse(func(k string) string { return env[k] }, environ)
	if err != nil {
		return "", "", 0, err
	}
	a, err := app.New(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return "", "", 0, err
	}
	go a.RunBackground(ctx)
	base = serve(a.Handler())
	key, _, err = a.Accounts.CreateKey(ctx, "bench")
	if err != nil {
		return "", "", 0, err
	}
	v, err := a.Tools.Create(ctx, mustAccount(ctx, a, key), "http-request", "noop")
	if err != nil {
		return "", "", 0, err
	}
	acct := mustAccount(ctx, a, key)
	if _, err := a.Tools.Provide(ctx, acct, v.ID, raw(map[string]string{"base_url": `"` + toolURL + `"`})); err != nil {
		return "", "", 0, err
	}
	if _, err := a.Tools.Provide(ctx, acct, v.ID, raw(map[string]string{"auth_type": `"none"`})); err != nil {
		return "", "", 0, err
	}
	return base, key, v.ID, nil
}

func mustAccount(ctx context.Context, a *app.App, key string) int64 {
	id, err := a.Accounts.Resolve(ctx, key)
	if err != nil {
		panic(err)
	}
	return id
}

// result holds one scenario's latencies.
type result struct {
	lat      []time.Duration
	elapsed  time.Duration
	errors   int
	firstErr string
}

func (r result) rps() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(float64(len(r.lat)-1)*p/100)]
}

// load runs conns workers for dur, each sending requests one after another.
func load(dur time.Duration, conns int, mk func(*http.Client, int64) (*http.Request, error)) result {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}}
	var mu sync.Mutex
	var res result
	var seq atomic.Int64
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			errs, first := 0, ""
			for time.Now().Before(deadline) {
				req, err := mk(client, seq.Add(1))
				if err != nil {
					errs++
					continue
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			if res.firstErr == "" {
				res.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	client.CloseIdleConnections()
	return res
}
