package store_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// BenchmarkInsertCalls writes call log batches of the size a replica
// flushes at about 700 calls a second (one flush every 100 ms), and reports
// the CPU per entry of this process: Quiver's share of logging a call.
//
//	go test ./internal/store -run '^$' -bench InsertCalls
func BenchmarkInsertCalls(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DatabaseURL: testdb.Postgres(b, "storebench")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		b.Fatal(err)
	}
	const batch = 70
	key := "k"
	n := 0
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		cs := make([]store.CallLog, batch)
		for i := range cs {
			n++
			cs[i] = store.CallLog{CallID: fmt.Sprintf("c_bench%020d", n), AccountID: 1, ToolID: 2, Action: "read_count",
				Outcome: "ok", DurationMS: 1, CreatedAt: time.Now()}
			if i%2 == 0 {
				cs[i].IdempotencyKey = &key
			}
		}
		if err := s.InsertCalls(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/1e3/float64(b.N*batch), "cpu-µs/entry")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
