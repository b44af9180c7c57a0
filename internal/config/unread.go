package config

import (
	"slices"
	"strings"

	"github.com/quiverhq/quiver/internal/editdistance"
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
			if d := editdistance.Levenshtein(name, known); d < best || (d == best && known < u.Suggest) {
				best, u.Suggest = d, known
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b UnreadVar) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b UnreadVar) bool { return a.Name == b.Name })
}
