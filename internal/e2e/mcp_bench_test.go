package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	quivermcp "github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// BenchmarkMCPReadCount calls Counter's read-only read_count three ways, so
// Quiver's overhead can be quoted: direct (a Go SDK session straight to the
// MCP server), rest (POST /api/v1/agents/custom-tools/call/ without a key)
// and agent-mcp (a Go SDK session to /api/v1/agents/{id}/mcp). The
// parallel16 variants run 16 goroutines.
//
//	go test ./internal/e2e/ -run '^$' -bench MCPReadCount -benchtime 2s
func BenchmarkMCPReadCount(b *testing.B) {
	srv := testserver.Start(b, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_LOG_LEVEL": "warn"}})
	counter := mcptest.Start(b, mcptest.Counter, mcptest.Options{})
	id := mqConnect(b, srv, "counter", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "bench", "tools": []int64{id}})
	if r.Status != 201 {
		b.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agentID := int64(r.JSON()["id"].(float64))

	// One pooled transport for every variant, wide enough for 16 callers.
	transport := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(transport.CloseIdleConnections)

	direct := mqBenchSession(b, counter.URL, "", transport)
	agent := mqBenchSession(b, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, agentID), srv.Key, transport)
	viaSDK := func(cs *mcp.ClientSession, name string) func(tb testing.TB) {
		params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		return func(tb testing.TB) {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				tb.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	restClient := &http.Client{Transport: transport}
	body := []byte(fmt.Sprintf(`{"tool":%d,"action":"read_count","arguments":{}}`, id))
	rest := func(tb testing.TB) {
		req, _ := http.NewRequest("POST", srv.URL+mqCallPath, bytes.NewReader(body))
		req.Header.Set("X-API-KEY", srv.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := restClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			tb.Fatalf("rest: %d", resp.StatusCode)
		}
	}

	variants := []struct {
		name string
		call func(testing.TB)
	}{
		{"direct", viaSDK(direct, "read_count")},
		{"rest", rest},
		{"agent-mcp", viaSDK(agent, "counter__read_count")},
	}
	for _, v := range variants {
		v.call(b) // warm: sessions, discovery, caches
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				v.call(b)
				lat = append(lat, time.Since(start))
			}
			mqReportLatency(b, lat)
		})
	}
	for _, v := range variants {
		b.Run(v.name+"-parallel16", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var mu sync.Mutex
			var lat []time.Duration
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
			mqReportLatency(b, lat)
		})
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
