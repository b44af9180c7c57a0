package main

import (
	"slices"
	"testing"
)

func TestServeEnv(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string // nil: left as it is
	}{
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=" + serveGODEBUG}},
		{[]string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + serveGODEBUG, "A=1"}},
		{[]string{"GODEBUG=gctrace=1"}, []string{"GODEBUG=gctrace=1," + serveGODEBUG}},
		{[]string{"GODEBUG=schedtrace=0"}, nil},
		{[]string{"GODEBUG=gctrace=1,schedtrace=1000"}, nil},
		// The runtime reads neither a spaced field nor a bare name.
		{[]string{"GODEBUG=gctrace=1, schedtrace=1000"}, []string{"GODEBUG=gctrace=1, schedtrace=1000," + serveGODEBUG}},
		{[]string{"GODEBUG=schedtrace"}, []string{"GODEBUG=schedtrace," + serveGODEBUG}},
		{[]string{"GODEBUG=" + serveGODEBUG}, nil}, // after the exec
		{[]string{"GODEBUG=schedtracex=1"}, []string{"GODEBUG=schedtracex=1," + serveGODEBUG}},
	} {
		got, ok := serveEnv(slices.Clone(tc.env))
		if tc.want == nil {
			if ok || !slices.Equal(got, tc.env) {
				t.Errorf("serveEnv(%q) = %q, %v; want it left alone", tc.env, got, ok)
			}
			continue
		}
		if !ok || !slices.Equal(got, tc.want) {
			t.Errorf("serveEnv(%q) = %q, %v; want %q", tc.env, got, ok, tc.want)
		}
	}
}
