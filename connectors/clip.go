package connectors

import "strings"

// Clip is s trimmed of surrounding space and cut to at most n characters
// (runes, so a character is never split), with "…" where it was cut: for a
// server's own words quoted in a message.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}
