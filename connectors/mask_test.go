package connectors

import (
	"slices"
	"testing"
)

func TestMasker(t *testing.T) {
	m := NewMasker(4, "abc", "tok-123", "tok-123-long", "a%2Fb%2Fc")
	got := m.Mask("abc tok-123 tok-123-long a/b/c a%2Fb%2Fc")
	if want := "abc **** **** **** ****"; got != want {
		t.Fatalf("Mask = %q, want %q (too short kept, longest first, unescaped forms too)", got, want)
	}
	if got := (NewMasker(4)).Mask("as it is"); got != "as it is" {
		t.Fatalf("nothing to mask: %q", got)
	}
}

func TestHiddenURLParts(t *testing.T) {
	got := HiddenURLParts("https://u:pw@h.example/s/Zk3q9v0aTr51xW8yZk/mcp?apiKey=abc&bare&region=eu#frag")
	want := []string{"u:pw", "pw", "Zk3q9v0aTr51xW8yZk", "abc", "bare", "eu"}
	if !slices.Equal(got, want) {
		t.Fatalf("HiddenURLParts = %q, want %q", got, want)
	}
	if got := HiddenURLParts("https://h.example/mcp"); got != nil {
		t.Fatalf("a URL that hides nothing: %q", got)
	}
}
