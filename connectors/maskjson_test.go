package connectors

import (
	"encoding/json"
	"testing"
)

// TestMaskJSON: a JSON document is masked inside its strings and where a
// number is a secret whole, and stays JSON; anything else is masked as
// text.
func TestMaskJSON(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		secrets        []string
	}{
		{"a number that is a secret becomes a string; one that holds its digits stays",
			`{"org":4815162342,"projects":[1,2],"at":[14815162342000, 4815162342]}`,
			`{"org":"****","projects":[1,2],"at":[14815162342000, "****"]}`, []string{"4815162342"}},
		{"in a string, and in a key", `{"auth":"Bearer tok-123456","tok-123456":true}`,
			`{"auth":"Bearer ****","****":true}`, []string{"tok-123456"}},
		{"escaped in a string", `{"x":"a\"b\\c12 and a\u0022"}`, `{"x":"**** and a\u0022"}`, []string{`a"b\c12`}},
		{"a bare form across an escape that is not the secret: as it was", `{"x":"toke\"n \u00e9"}`,
			`{"x":"toke\"n \u00e9"}`, []string{`toke\`}},
		{"a bare form across an escape, beside the secret", `{"x":"toke\"n toke\\"}`, `{"x":"toke\"n ****"}`, []string{`toke\`}},
		{"a bare form across other escapes that are not the secret: as they were", `["toke\n","toke\u00e9","toke\/p","toke\tab"]`,
			`["toke\n","toke\u00e9","toke\/p","toke\tab"]`, []string{`toke\`}},
		{"not JSON: as text", `refused: token tok-123456 {`, `refused: token **** {`, []string{"tok-123456"}},
		{"nothing to mask", `{"n":1}`, `{"n":1}`, []string{"tok-123456"}},
	} {
		e := NewEcho(4, c.secrets...)
		got := string(e.MaskJSON([]byte(c.in)))
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if json.Valid([]byte(c.in)) && !json.Valid([]byte(got)) {
			t.Errorf("%s: masked into invalid JSON: %s", c.name, got)
		}
	}
	if got := NewEcho(4, "tok-123456").MaskJSON(nil); got != nil {
		t.Errorf("nil: %q", got)
	}
}
