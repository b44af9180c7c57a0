package connectors

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRetryAfter is the delay of a 429 that gives none we can use;
// maxRetryAfter keeps an absurd one from overflowing a Duration.
const (
	DefaultRetryAfter = time.Second
	maxRetryAfter     = 24 * time.Hour
)

// RetryAfter reads a tool server's Retry-After header, in seconds or as an
// HTTP date (RFC 9110), as of now. A missing, unreadable or past value is
// DefaultRetryAfter: a 429 means "later", and later is at least a second.
// The caller bounds how long a client is told to wait.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultRetryAfter
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil && n <= 0:
		return DefaultRetryAfter
	case err == nil:
		return time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	case errors.Is(err, strconv.ErrRange) && v[0] != '-':
		return maxRetryAfter // seconds past int64: absurd, and long
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d >= DefaultRetryAfter {
			return min(d, maxRetryAfter)
		}
	}
	return DefaultRetryAfter
}
