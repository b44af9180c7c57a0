package config

import (
	"strings"
	"testing"
	"time"
)

// QUIVER_SHUTDOWN_DELAY is 0 unless set (a local Ctrl-C stays instant),
// takes 0 and any duration up to MaxShutdownDelay, and refuses anything
// else with an error that names it.
func TestShutdownDelay(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, " ": 0, "0": 0, "1s": time.Second, " 15s ": 15 * time.Second, "5m": MaxShutdownDelay} {
		c, err := parse(map[string]string{"QUIVER_SHUTDOWN_DELAY": v})
		if err != nil || c.ShutdownDelay != want || len(c.Unread) != 0 {
			t.Errorf("QUIVER_SHUTDOWN_DELAY=%q: %v, %v; want %v, and the variable read", v, c, err, want)
		}
	}
	for v, says := range map[string]string{
		"soon":   `"soon" is neither 0`,
		"15":     `"15" is neither 0`,
		"-1s":    `"-1s" is neither 0`,
		"5m1s":   "must be at most 5m0s",
		"1000h":  "must be at most 5m0s",
		"1s 2s ": "is neither 0",
	} {
		_, err := parse(map[string]string{"QUIVER_SHUTDOWN_DELAY": v})
		if err == nil || !strings.Contains(err.Error(), "QUIVER_SHUTDOWN_DELAY: ") || !strings.Contains(err.Error(), says) {
			t.Errorf("QUIVER_SHUTDOWN_DELAY=%q: error %v, want one naming the variable and saying %q", v, err, says)
		}
	}
}
