package mcp

import (
	"context"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
)

// BenchmarkCachedActionsParallel is the discovery cache's read of a warm
// list, as every call of a found action makes it (CachedActions), from many
// goroutines: a re-list of a missing action must add nothing to it.
func BenchmarkCachedActionsParallel(b *testing.B) {
	srv, c, tool := counterSetup(b, mcptest.Options{Stateless: true}, nil)
	_ = srv
	if _, err := c.Actions(context.Background(), tool); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := c.CachedActions(tool); !ok {
				b.Fatal("not cached")
			}
		}
	})
}
