package calls

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	for k, ok := range map[string]bool{"a": true, " a": false, "a ": false, "": false, "a\tb": false, "a\x7fb": false, "é": false,
		strings.Repeat("k", 255): true, strings.Repeat("k", 256): false, "a b": true, "~!": true} {
		if ValidKey(k) != ok {
			t.Errorf("ValidKey(%q) = %v", k, !ok)
		}
	}
}
