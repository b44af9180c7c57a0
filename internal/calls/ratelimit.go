package calls

import (
	"math"
	"sync"

	"golang.org/x/time/rate"

	"github.com/quiverhq/quiver/internal/problem"
)

// limiter is a token bucket per account, on this replica. It is checked
// before anything else of a call, so a refused call costs nothing and
// touches no key.
type limiter struct {
	perSecond float64
	burst     int
	mu        sync.Mutex
	buckets   map[int64]*rate.Limiter
}

// maxBuckets bounds memory; past it the map starts over (every account
// gets a full bucket again, which only errs on the side of letting calls in).
const maxBuckets = 100_000

func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = int(math.Max(1, math.Ceil(2*perSecond)))
	}
	return &limiter{perSecond: perSecond, burst: burst, buckets: map[int64]*rate.Limiter{}}
}

// allow returns a rate_limited error when the account is over its limit.
func (l *limiter) allow(account int64) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	b, ok := l.buckets[account]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.buckets = map[int64]*rate.Limiter{}
		}
		b = rate.NewLimiter(rate.Limit(l.perSecond), l.burst)
		l.buckets[account] = b
	}
	l.mu.Unlock()
	r := b.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		p := problem.New(problem.RateLimited, "Too many calls for this account; try again after the delay in Retry-After (retry_after in an MCP tool error).")
		p.RetryAfter = int(math.Ceil(d.Seconds()))
		if p.RetryAfter < 1 {
			p.RetryAfter = 1
		}
		return p
	}
	return nil
}
