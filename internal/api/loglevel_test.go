package api

import (
	"log/slog"
	"testing"
)

// A request's log line is ERROR only for Quiver's own failures and its
// database's or Redis's; a tool's server failing it is WARN.
func TestRequestLevel(t *testing.T) {
	for status, want := range map[int]slog.Level{
		200: slog.LevelInfo, 404: slog.LevelInfo, 409: slog.LevelInfo, 429: slog.LevelInfo,
		500: slog.LevelError, 503: slog.LevelError,
		502: slog.LevelWarn, 504: slog.LevelWarn,
	} {
		if got := requestLevel(status); got != want {
			t.Errorf("requestLevel(%d) = %v, want %v", status, got, want)
		}
	}
}
