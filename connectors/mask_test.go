package connectors

import (
	"encoding/json"
	"slices"
	"strings"
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

// TestJSONForms: a secret's forms inside a JSON string, each as
// encoding/json writes it, so that masking them all leaves no trace.
func TestJSONForms(t *testing.T) {
	if got := JSONForms("plain-token.123"); len(got) != 1 || got[0] != "plain-token.123" {
		t.Errorf("a secret JSON writes as it is: %q", got)
	}
	secret := `a/b"c<d>&e` + "\t"
	forms := JSONForms(secret)
	for _, html := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(map[string]string{"k": secret})
		masked := NewMasker(4, forms...).Mask(b.String())
		if strings.Contains(masked, "c") || !json.Valid([]byte(masked)) {
			t.Errorf("html %v: %s masked to %s", html, b.String(), masked)
		}
	}
	if masked := NewMasker(4, forms...).Mask(`{"k":"a\/b\"c\u003cd\u003e\u0026e\t"}`); masked != `{"k":"****"}` {
		t.Errorf("the \\/ form: %s", masked)
	}
}
