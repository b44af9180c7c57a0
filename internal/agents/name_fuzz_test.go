package agents

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAgentName: a name Check accepts is what is stored, trimmed, and
// shows something on one line within MaxNameLen characters; every other
// name is refused under fields.name, never changed into an accepted one.
func FuzzAgentName(f *testing.F) {
	for _, s := range []string{"a", " a ", "", " ", "\u200b", "\u3164", "\u2800", "a\u2028b", "a\x1bb", "\u0301", "é",
		strings.Repeat("n", 200), strings.Repeat("n", 201), " " + strings.Repeat("é", 200) + " ", "\ufe0f", "a\u3164"} {
		f.Add(s)
	}
	svc := New(nil) // no tools are given, so the store is never asked
	f.Fuzz(func(t *testing.T, name string) {
		if !utf8.ValidString(name) {
			return // JSON text is UTF-8: the API refuses it before Check
		}
		n := name
		err := svc.Check(context.Background(), 1, Input{Name: &n}, true)
		if err != nil {
			return
		}
		if n != strings.TrimSpace(name) {
			t.Fatalf("%q accepted as %q, not trimmed", name, n)
		}
		if Blank(n) || HasControl(n) || utf8.RuneCountInString(n) > MaxNameLen {
			t.Fatalf("%q accepted: blank %v, control %v, %d characters", name, Blank(n), HasControl(n), utf8.RuneCountInString(n))
		}
	})
}
