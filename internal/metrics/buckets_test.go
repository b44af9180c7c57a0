package metrics

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/config"
)

// TestLatencyBucketsHoldATimeout: a call that ran into the default
// QUIVER_CALL_TIMEOUT is answered a little after it, and a request ends
// within its lease (timeout plus grace) and 10 s more: each of those
// latencies falls in a finite bucket of both latency histograms, above the
// bucket of the call timeout itself, so a timeout is told from a slow call
// that finished and neither is lost in +Inf. At the low end, a replay
// (microseconds from memory) has buckets of its own.
func TestLatencyBucketsHoldATimeout(t *testing.T) {
	t.Parallel()
	m := New()
	timedOut := config.DefaultCallTimeout + 200*time.Millisecond
	longest := config.DefaultCallTimeout + config.DefaultLeaseGrace + 10*time.Second
	for _, d := range []time.Duration{timedOut, longest} {
		m.CallDuration.WithLabelValues("first").Observe(d.Seconds())
		m.HTTPDuration.WithLabelValues("/api/v1/agents/custom-tools/call", "POST").Observe(d.Seconds())
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, name := range []string{`quiver_call_duration_seconds_bucket{phase="first",`, `quiver_http_request_duration_seconds_bucket{method="POST",`} {
		var les []float64
		counts := map[float64]float64{}
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if !strings.HasPrefix(l, name) {
				continue
			}
			i := strings.Index(l, `le="`) + len(`le="`)
			j := strings.Index(l[i:], `"`)
			le, err := strconv.ParseFloat(l[i:i+j], 64)
			n, err2 := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err != nil || err2 != nil {
				t.Fatalf("unparsable line %q", l)
			}
			les = append(les, le)
			counts[le] = n
		}
		if len(les) < 3 {
			t.Fatalf("%s: no buckets in\n%s", name, rec.Body.String())
		}
		top := les[len(les)-2] // the last is +Inf
		if counts[top] != 2 {
			t.Errorf("%s: a latency of %s or %s is past its largest finite bucket (le=%g): only +Inf holds it", name, timedOut, longest, top)
		}
		if n, ok := counts[config.DefaultCallTimeout.Seconds()]; !ok || n != 0 {
			t.Errorf("%s: no bucket ends at the call timeout (%s), below the answer of a call that ran into it", name, config.DefaultCallTimeout)
		}
		// A replay from the in-process near tier takes a few microseconds,
		// one through Redis on loopback some tens: a first bucket past
		// them holds every replay, and says nothing of any.
		if les[0] > 0.00001 || les[1] > 0.0001 {
			t.Errorf("%s: the smallest buckets are le=%g and le=%g, past a replay from memory (µs) or Redis on loopback", name, les[0], les[1])
		}
	}
}
