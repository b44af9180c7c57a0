package jsondepth

import (
	"strings"
	"testing"
)

func TestExceeds(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		name string
		data string
		want bool
	}{
		{"at the limit", nest(SDKLimit), false},
		{"one past it", nest(SDKLimit + 1), true},
		{"objects and arrays count alike", strings.Repeat(`{"a":[`, SDKLimit/2) + `{}` + strings.Repeat(`]}`, SDKLimit/2), true},
		{"brackets in strings do not count", `["` + strings.Repeat("[", 2*SDKLimit) + `"]`, false},
		{"an escaped quote keeps the string open", `["\"` + strings.Repeat("{", 2*SDKLimit) + `"]`, false},
		{"many siblings are not depth", strings.Repeat("[]", 2*SDKLimit), false},
		{"a stray closer does not go below zero", "]]" + nest(SDKLimit+1), true},
	} {
		if got := Exceeds([]byte(c.data), SDKLimit); got != c.want {
			t.Errorf("%s: Exceeds = %v, want %v", c.name, got, c.want)
		}
	}
}
