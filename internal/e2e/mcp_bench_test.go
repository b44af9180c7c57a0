package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	quivermcp "github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// BenchmarkMCPReadCount calls Counter's read-only read_count several ways,
// so Quiver's overhead can be quoted: direct (a Go SDK session straight to
// the MCP server), direct-http (the same tools/call on that session, posted
// with net/http's client), through two baseline proxies (bare-proxy,
// tcp-forward), rest (POST /api/v1/agents/custom-tools/call/ without a key),
// agent-mcp (a Go SDK session to /api/v1/agents/{id}/mcp) and agent-http
// (the same tools/call posted with net/http's client). The parallel16
// variants run 16 goroutines.
// Each variant runs on its own for the bench time, so the machine's speed
// may move between them; BenchmarkMCPInterleaved takes them in turns.
//
//	go test ./internal/e2e/ -run '^$' -bench MCPReadCount -benchtime 2s
func BenchmarkMCPReadCount(b *testing.B) {
	variants := mqSetup(b)
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			cpu, qcpu := processCPU(), v.proxy.cpu()
			for b.Loop() {
				start := time.Now()
				v.call(b)
				lat = append(lat, time.Since(start))
			}
			mqReportCPU(b, cpu, qcpu, v.proxy, len(lat))
			mqReportLatency(b, lat)
		})
	}
	for _, v := range variants {
		b.Run(v.name+"-parallel16", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var mu sync.Mutex
			var lat []time.Duration
			cpu, qcpu := processCPU(), v.proxy.cpu()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					start := time.Now()
					v.call(b)
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			mqReportCPU(b, cpu, qcpu, v.proxy, len(lat))
			mqReportLatency(b, lat)
		})
	}
}

// mqVariant is one way of calling read_count.
type mqVariant struct {
	name string
	call func(testing.TB)
	// proxy is the process between caller and server whose CPU is
	// measured: Quiver, or a baseline proxy (direct's is Quiver, idle).
	proxy *proc
}

// mqSetup starts Quiver, the MCP server and the baseline proxies, connects
// the server to Quiver as a tool attached to an agent, and returns the
// variants, each called once (sessions, discovery and caches warm).
func mqSetup(b *testing.B) []mqVariant {
	b.Helper()
	counter := mcptest.Start(b, mcptest.Counter, mcptest.Options{})
	quiver, key, id, agentID := mqQuiver(b, quiverBinary(b), "mcpbench", counter.URL)

	// One pooled transport for every variant, wide enough for 16 callers.
	transport := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(transport.CloseIdleConnections)

	direct := mqBenchSession(b, counter.URL, "", transport)
	bare := startBareProxy(b, counter.URL, "http")
	viaProxy := mqBenchSession(b, bare.URL, "", transport)
	fwd := startBareProxy(b, counter.URL, "tcp")
	viaFwd := mqBenchSession(b, fwd.URL, "", transport)
	agent := mqBenchSession(b, fmt.Sprintf("%s/api/v1/agents/%d/mcp", quiver.URL, agentID), key, transport)
	viaSDK := func(cs *mcp.ClientSession, name string) func(tb testing.TB) {
		params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		return func(tb testing.TB) {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				tb.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	// viaHTTP posts body to url with net/http's client; ok checks the
	// answer's body.
	httpClient := &http.Client{Transport: transport}
	viaHTTPKey := func(key, name, url string, body func() []byte, ok func([]byte) bool, headers ...string) func(tb testing.TB) {
		return func(tb testing.TB) {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body()))
			req.Header.Set("X-API-KEY", key)
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				tb.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !ok(b) {
				tb.Fatalf("%s: %d %s", name, resp.StatusCode, b)
			}
		}
	}
	viaHTTP := func(name, url string, body func() []byte, ok func([]byte) bool, headers ...string) func(tb testing.TB) {
		return viaHTTPKey(key, name, url, body, ok, headers...)
	}
	// callBody is a tools/call of tool, each with an ID of its own (a
	// session may refuse an ID still in flight), far from the SDK client's.
	var lastID atomic.Int64
	lastID.Store(1 << 40)
	callBody := func(tool string) func() []byte {
		return func() []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, lastID.Add(1), tool)
		}
	}
	mcpOK := func(b []byte) bool {
		return bytes.Contains(b, []byte(`"result":{`)) && !bytes.Contains(b, []byte(`"isError":true`))
	}
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", quivermcp.ProtocolVersion}
	// direct-http posts tools/call on direct's session with net/http's
	// client: what the SDK client itself costs when caller and server share
	// a process, to set against agent-mcp minus agent-http.
	directHTTP := viaHTTP("direct-http", counter.URL, callBody("read_count"), mcpOK,
		append(mcpHeaders, "Mcp-Session-Id", direct.ID())...)
	restBody := fmt.Appendf(nil, `{"tool":%d,"action":"read_count","arguments":{}}`, id)
	rest := viaHTTP("rest", quiver.URL+mqCallPath, func() []byte { return restBody }, func([]byte) bool { return true })
	// agent-http posts the same tools/call to the agent endpoint with
	// net/http's client, as rest does: Quiver's side of agent-mcp without the
	// SDK client's own hand-offs, which a process hop makes dearer.
	agentHTTP := viaHTTP("agent-http", fmt.Sprintf("%s/api/v1/agents/%d/mcp", quiver.URL, agentID),
		callBody("counter__read_count"), mcpOK, mcpHeaders...)
	variants := []mqVariant{
		{"direct", viaSDK(direct, "read_count"), quiver},
		{"direct-http", directHTTP, quiver},
		{"bare-proxy", viaSDK(viaProxy, "read_count"), bare},
		{"tcp-forward", viaSDK(viaFwd, "read_count"), fwd},
		{"rest", rest, quiver},
		{"agent-mcp", viaSDK(agent, "counter__read_count"), quiver},
		{"agent-http", agentHTTP, quiver},
	}
	// A baseline build, when given, answers rest, agent-mcp and agent-http
	// too, in turns with this build's, so a change is measured against what
	// it changes in the same stretch of time.
	if bin := os.Getenv("QUIVER_BENCH_BASELINE"); bin != "" {
		base, key, id, agentID := mqQuiver(b, bin, "mcpbenchbase", counter.URL)
		agentURL := fmt.Sprintf("%s/api/v1/agents/%d/mcp", base.URL, agentID)
		restBody := fmt.Appendf(nil, `{"tool":%d,"action":"read_count","arguments":{}}`, id)
		variants = append(variants,
			mqVariant{"rest-base", viaHTTPKey(key, "rest-base", base.URL+mqCallPath, func() []byte { return restBody }, func([]byte) bool { return true }), base},
			mqVariant{"agent-mcp-base", viaSDK(mqBenchSession(b, agentURL, key, transport), "counter__read_count"), base},
			mqVariant{"agent-http-base", viaHTTPKey(key, "agent-http-base", agentURL, callBody("counter__read_count"), mcpOK, mcpHeaders...), base},
		)
	}
	for _, v := range variants {
		v.call(b)
	}
	return variants
}

// mqQuiver starts bin as quiver serve on a database of its own, connects
// the MCP server at counterURL to it as a tool attached to an agent, and
// returns the process, an API key, the tool's ID and the agent's.
func mqQuiver(b *testing.B, bin, db, counterURL string) (quiver *proc, key string, id, agentID int64) {
	b.Helper()
	// Quiver runs as its own process, as in production, so its CPU time is
	// its own: the caller and the MCP server share this process.
	env := map[string]string{
		"DATABASE_URL":                testdb.Postgres(b, db),
		"QUIVER_SECRET_KEY":           testserver.TestSecretKey,
		"QUIVER_DATA_DIR":             b.TempDir(),
		"QUIVER_EGRESS_ALLOW_PRIVATE": "true",
		"QUIVER_LOG_LEVEL":            "warn",
		"QUIVER_PPROF_ADDR":           os.Getenv("QUIVER_BENCH_PPROF_ADDR"), // to profile Quiver during a run
		"GOGC":                        os.Getenv("QUIVER_BENCH_GOGC"),       // the Quiver under test's alone
		"GOMAXPROCS":                  os.Getenv("QUIVER_BENCH_GOMAXPROCS"), // likewise
		"GODEBUG":                     os.Getenv("QUIVER_BENCH_GODEBUG"),    // likewise
	}
	if bin != quiverBinary(b) {
		env["QUIVER_PPROF_ADDR"] = "" // the address is the build under test's
	}
	key = createKeyWith(b, bin, env, "bench")
	quiver = startProcAs(b, env, bin, "serve")
	r := testserver.Do(b, quiver.URL, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp", "name": "counter"})
	if r.Status != 201 {
		b.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id = int64(r.JSON()["id"].(float64))
	r = testserver.Do(b, quiver.URL, key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counterURL}})
	if r.Status != 200 {
		b.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	r = testserver.Do(b, quiver.URL, key, "POST", "/api/v1/agents/", map[string]any{"name": "bench", "tools": []int64{id}})
	if r.Status != 201 {
		b.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	return quiver, key, id, int64(r.JSON()["id"].(float64))
}

// proxyTargetEnv, when set, makes this test binary a bare reverse proxy to
// the URL it holds (see TestMain).
const proxyTargetEnv = "QUIVER_E2E_BARE_PROXY_TARGET"

// startBareProxy runs this test binary as a bare reverse proxy to target,
// in a process of its own like Quiver: the benchmark's floor for what any
// proxy adds on this machine (two more loopback hops, one more process).
func startBareProxy(b *testing.B, target, mode string) *proc {
	b.Helper()
	addr := freeAddr(b)
	p := &proc{t: b, URL: "http://" + addr + "/mcp", logs: &strings.Builder{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(os.Environ(), proxyTargetEnv+"="+target, "QUIVER_E2E_BARE_PROXY_ADDR="+addr, "QUIVER_E2E_BARE_PROXY_MODE="+mode)
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	b.Cleanup(p.kill)
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p
		}
		if i == 200 {
			b.Fatal("the bare proxy did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runBareProxy serves a reverse proxy to target until killed; in mode tcp
// it forwards bytes without reading HTTP at all.
func runBareProxy(target string) {
	u, err := url.Parse(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv("QUIVER_E2E_BARE_PROXY_MODE") == "tcp" {
		forwardTCP(os.Getenv("QUIVER_E2E_BARE_PROXY_ADDR"), u.Host)
		return
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.URL.Path = u.Path }, FlushInterval: -1}
	if err := http.ListenAndServe(os.Getenv("QUIVER_E2E_BARE_PROXY_ADDR"), rp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// mqReportLatency reports the median and 99th percentile of one call's
// latency, in microseconds (ns/op of a parallel run is wall time divided by
// calls, not a latency).
func mqReportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mqReportCPU reports CPU time per call since the given readings: of this
// process (the caller and the MCP server) and of the Quiver process.
func mqReportCPU(b *testing.B, since, quiverSince time.Duration, quiver *proc, calls int) {
	if calls > 0 {
		b.ReportMetric(float64((processCPU()-since).Nanoseconds())/1e3/float64(calls), "caller+server-cpu-µs/op")
		b.ReportMetric(float64((quiver.cpu()-quiverSince).Nanoseconds())/1e3/float64(calls), "quiver-cpu-µs/op")
	}
}

func mqBenchSession(b *testing.B, endpoint, key string, transport http.RoundTripper) *mcp.ClientSession {
	b.Helper()
	var rt http.RoundTripper = transport
	if key != "" {
		rt = mqKeyTransport{key: key, base: transport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "quiver-bench", Version: "1"}, nil)
	// Both sessions speak the same protocol version, so the comparison
	// measures Quiver and not a difference between protocol versions.
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: rt}}, &mcp.ClientSessionOptions{ProtocolVersion: quivermcp.ProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// forwardTCP copies bytes between each connection to addr and one to
// target, until killed.
func forwardTCP(addr, target string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for {
		in, err := ln.Accept()
		if err != nil {
			os.Exit(2)
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer out.Close()
			go io.Copy(out, in)
			io.Copy(in, out)
		}()
	}
}
