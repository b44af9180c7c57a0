package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
)

// BenchmarkCallWarm compares a warm call through the Connector with the same
// call on a bare SDK session against the same in-process server; the
// difference is the Connector's overhead. Each reports its median as p50-ns.
func BenchmarkCallWarm(b *testing.B) {
	srv := mcptest.Start(b, mcptest.Counter, mcptest.Options{})
	args := json.RawMessage(`{"q":"x"}`)

	b.Run("connector", func(b *testing.B) {
		c := setup(b, nil)
		tool := toolFor(srv, 1, map[string]string{"bearer_token": "t"})
		ctx := context.Background()
		if _, err := c.Call(ctx, tool, "echo", args); err != nil {
			b.Fatal(err)
		}
		measure(b, func() error {
			_, err := c.Call(ctx, tool, "echo", args)
			return err
		})
	})

	b.Run("sdk", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sess.Close() })
		ctx := context.Background()
		measure(b, func() error {
			_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			return err
		})
	})
}

// measure runs f b.N times and reports the median duration.
func measure(b *testing.B, f func() error) {
	b.Helper()
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
}
