package config

import (
	"slices"
	"strings"
)

// UnreadVar is a QUIVER_* variable set in the environment that Quiver does
// not read, and the name it reads that is closest to it, if one is close.
type UnreadVar struct {
	Name    string
	Suggest string // "" when no name Quiver reads is near
}

// notOurs are prefixes of QUIVER_* variables that Quiver's own tooling
// reads (tests, benchmarks, the SDKs' test runners), not the server.
var notOurs = []string{"QUIVER_TEST_", "QUIVER_BENCH_", "QUIVER_E2E_", "QUIVER_BIN"}

// unread returns the QUIVER_* variables of environ that Parse did not read
// (read holds every name it asked for), by name. A misspelling such as
// QUIVER_CALLTIMEOUT would otherwise leave the default in force without a
// word. The OAuth and MCP URL families are checked where they are read.
func unread(environ []string, read map[string]bool) []UnreadVar {
	var out []UnreadVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "QUIVER_") || read[name] ||
			strings.HasPrefix(name, "QUIVER_OAUTH_") || strings.HasPrefix(name, "QUIVER_MCP_URL_") ||
			slices.ContainsFunc(notOurs, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		u := UnreadVar{Name: name}
		best := 4 // suggest only a name within three edits
		for known := range read {
			if d := distance(name, known); d < best || (d == best && known < u.Suggest) {
				best, u.Suggest = d, known
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b UnreadVar) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b UnreadVar) bool { return a.Name == b.Name })
}

// distance is the Levenshtein distance between a and b, in bytes (the
// names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
