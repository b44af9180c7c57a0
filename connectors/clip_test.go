package connectors

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"  short  ", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one more", 7, "one mor…"},
		{strings.Repeat("é", 5), 3, "ééé…"},
		{"", 3, ""},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
