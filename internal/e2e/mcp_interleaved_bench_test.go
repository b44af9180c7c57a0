package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMCPInterleaved measures BenchmarkMCPReadCount's variants in
// turns rather than one after another: short blocks of each, rotated, many
// rounds. The machine's speed moves over seconds on this box (run to run,
// a byte-copying forwarder has cost anything from +0.12 to +0.28 ms), so
// figures taken in separate windows are hard to compare; here every variant
// samples the same stretch of time, and a ratio or difference between two
// variants is worth quoting on its own.
//
// Sequential blocks are mqSeqCalls calls after a few unmeasured warm-up
// calls (the processes a variant uses were idle during the previous
// block); parallel blocks run 16 callers for mqParWindow after a warm-up.
// CPU is the proxy process's on-CPU time from /proc/PID/task/*/schedstat
// (nanoseconds, unlike stat's 10 ms ticks). One iteration takes about 30 s:
//
//	go test ./internal/e2e/ -run '^$' -bench MCPInterleaved -benchtime 1x
//
// QUIVER_BENCH_ROUNDS sets the number of rounds (default 24).
// QUIVER_BENCH_BASELINE names another quiver binary (a build of the commit
// a change starts from) to measure in the same turns: rest, agent-mcp and
// agent-http against it too, and this build's figures over its.
func BenchmarkMCPInterleaved(b *testing.B) {
	variants := mqSetup(b)
	rounds := 24
	if n, err := strconv.Atoi(os.Getenv("QUIVER_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seq := make([]mqSeqTally, len(variants))
	par := make([]mqParTally, len(variants))
	for b.Loop() {
		for r := range rounds {
			for k := range variants {
				i := (r + k) % len(variants) // rotate, so no variant always follows the same one
				seq[i].run(b, variants[i])
			}
		}
		for r := range rounds {
			for k := range variants {
				i := (r + k) % len(variants)
				par[i].run(b, variants[i])
			}
		}
	}

	// The figures set every variant against direct (the Go SDK
	// client); rest, agent-http and direct-http use net/http's client, which
	// costs the caller less, so they are also set against direct-http.
	direct, directHTTP := 0, 1 // positions in mqSetup's list
	var t strings.Builder
	fmt.Fprintf(&t, "%d rounds; \"same client\": against direct-http for the variants that use net/http's client\n", rounds)
	fmt.Fprintf(&t, "%-12s %8s %12s %12s %10s %12s %10s %10s %8s\n", "variant", "p50 µs", "over direct", "same client",
		"x direct", "same client", "CPU 1 µs", "CPU 16 µs", "runs 1")
	for i, v := range variants {
		same := direct
		if strings.Contains(v.name, "-http") || strings.HasPrefix(v.name, "rest") {
			same = directHTTP
		}
		over, overSame := seq[i].p50()-seq[direct].p50(), seq[i].p50()-seq[same].p50()
		ratio, ratioSame := par[i].rate()/par[direct].rate(), par[i].rate()/par[same].rate()
		cpu1, cpu16, runs1 := seq[i].cpuPerCall(), par[i].cpuPerCall(), seq[i].runsPerCall()
		if i == direct || i == directHTTP {
			cpu1, cpu16, runs1 = 0, 0, 0 // no proxy in the path
		}
		fmt.Fprintf(&t, "%-12s %8.1f %+12.1f %+12.1f %10.2f %12.2f %10.1f %10.1f %8.2f\n", v.name, mus(seq[i].p50()),
			mus(over), mus(overSame), ratio, ratioSame, mus(cpu1), mus(cpu16), runs1)
		switch v.name {
		case "rest", "agent-mcp":
			b.ReportMetric(mus(over), v.name+"-over-direct-µs")
			b.ReportMetric(ratio, v.name+"-x-direct")
			b.ReportMetric(mus(cpu1), v.name+"-cpu1-µs")
			b.ReportMetric(mus(cpu16), v.name+"-cpu16-µs")
		}
	}
	// Against a baseline build (QUIVER_BENCH_BASELINE): each variant it
	// answers, this build's figure over the baseline's.
	for i, v := range variants {
		base := slices.IndexFunc(variants, func(w mqVariant) bool { return w.name == v.name+"-base" })
		if base < 0 {
			continue
		}
		fmt.Fprintf(&t, "%-12s p50 %+7.1f µs over baseline, throughput %.2fx, CPU %.2fx / %.2fx (1 / 16 callers)\n", v.name,
			mus(seq[i].p50()-seq[base].p50()), par[i].rate()/par[base].rate(),
			float64(seq[i].cpuPerCall())/float64(seq[base].cpuPerCall()), float64(par[i].cpuPerCall())/float64(par[base].cpuPerCall()))
	}
	b.Log("\n" + t.String())
}

// mqSeqCalls is how many calls a sequential block measures, after
// mqSeqWarm unmeasured ones.
const (
	mqSeqCalls  = 40
	mqSeqWarm   = 5
	mqParWindow = 150 * time.Millisecond
	mqParWarm   = 20 * time.Millisecond
)

// mqSeqTally is one variant's sequential blocks.
type mqSeqTally struct {
	lat  []time.Duration
	cpu  time.Duration
	runs int64 // times the proxy's threads were put on a CPU
}

func (t *mqSeqTally) run(b *testing.B, v mqVariant) {
	for range mqSeqWarm {
		v.call(b)
	}
	cpu, runs := v.proxy.onCPU()
	for range mqSeqCalls {
		start := time.Now()
		v.call(b)
		t.lat = append(t.lat, time.Since(start))
	}
	cpu2, runs2 := v.proxy.onCPU()
	t.cpu += cpu2 - cpu
	t.runs += runs2 - runs
}

func (t *mqSeqTally) p50() time.Duration {
	s := slices.Clone(t.lat)
	slices.Sort(s)
	return s[len(s)/2]
}

func (t *mqSeqTally) cpuPerCall() time.Duration { return t.cpu / time.Duration(len(t.lat)) }

func (t *mqSeqTally) runsPerCall() float64 { return float64(t.runs) / float64(len(t.lat)) }

// mqParTally is one variant's parallel blocks.
type mqParTally struct {
	calls int64
	wall  time.Duration
	cpu   time.Duration
}

// run keeps 16 callers busy for mqParWarm plus mqParWindow, counting the
// calls that end inside the window.
func (t *mqParTally) run(b *testing.B, v mqVariant) {
	var measuring, stop atomic.Bool
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				v.call(b)
				if measuring.Load() {
					calls.Add(1)
				}
			}
		})
	}
	time.Sleep(mqParWarm)
	cpu, _ := v.proxy.onCPU()
	start := time.Now()
	measuring.Store(true)
	time.Sleep(mqParWindow)
	measuring.Store(false)
	t.wall += time.Since(start)
	cpu2, _ := v.proxy.onCPU()
	t.cpu += cpu2 - cpu
	t.calls += calls.Load()
	stop.Store(true)
	wg.Wait()
}

func (t *mqParTally) rate() float64 { return float64(t.calls) / t.wall.Seconds() }

func (t *mqParTally) cpuPerCall() time.Duration { return t.cpu / time.Duration(max(t.calls, 1)) }

// onCPU is the time p's threads have spent on a CPU and how many times
// they were put on one, from the scheduler's per-thread statistics.
func (p *proc) onCPU() (time.Duration, int64) {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.cmd.Process.Pid))
	var sum time.Duration
	var runs int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(b)) // on-CPU ns, waiting ns, times run
		if len(fields) < 3 {
			continue
		}
		if ns, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			sum += time.Duration(ns)
		}
		if n, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
			runs += n
		}
	}
	return sum, runs
}

// mus is d in microseconds.
func mus(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
