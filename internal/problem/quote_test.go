package problem

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"tavily":                   `"tavily"`,
		strings.Repeat("é", 64):    `"` + strings.Repeat("é", 64) + `"`,
		strings.Repeat("é", 65):    `"` + strings.Repeat("é", 64) + `…"`,
		"a\nb":                     `"a\nb"`,
		strings.Repeat("x", 1<<20): `"` + strings.Repeat("x", 64) + `…"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%.20q…) = %.80s, want %.80s", in, got, want)
		}
	}
}
