package connectors

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                      DefaultRetryAfter,
		"7":                     7 * time.Second,
		" 30 ":                  30 * time.Second,
		"0":                     DefaultRetryAfter,
		"-5":                    DefaultRetryAfter,
		"soon":                  DefaultRetryAfter,
		"1.5":                   DefaultRetryAfter,
		"999999999999":          maxRetryAfter,
		"99999999999999999999":  maxRetryAfter, // past int64
		"-99999999999999999999": DefaultRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       DefaultRetryAfter,
		now.Add(48 * time.Hour).Format(http.TimeFormat):   maxRetryAfter,
	} {
		if got := RetryAfter(in, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}
