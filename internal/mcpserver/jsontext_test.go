package mcpserver

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendQuotedAsMarshal: appendQuoted writes every string as
// json.Marshal does, bytes that are not UTF-8 included, and appendCompact
// every JSON value as json.Marshal writes it as a RawMessage.
func TestAppendQuotedAsMarshal(t *testing.T) {
	texts := []string{"", "plain", `{"n":1,"s":"a\"b\\c"}`, "<b>&amp;</b>", "tab\tnl\nret\r\b\f\x00\x1f\x7f",
		"ünïcödé 日本 😀", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x80", "\xed\xa0\x80 surrogate", "\xe2\x80\xa8x"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\<>&\n\t\x01 \xe2\x80\xa8\xa9\xc3\xbc\xff{}[]:,0")
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		want, _ := json.Marshal(s)
		if got := appendQuoted([]byte("x"), s); !bytes.Equal(got[1:], want) {
			t.Errorf("string %q: got %s, want %s", s, got[1:], want)
		}
		if got := appendQuoted(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("bytes %q: got %s, want %s", s, got, want)
		}
	}
	values := []string{`{"n":1}`, `{"a": [1, 2]}`, "{\n\t\"a\":\"<&>\"\r\n}", `{"s":"\u2028 x"}`, `{"k":"日本"}`, `[]`, `"x"`}
	for _, v := range values {
		want, _ := json.Marshal(json.RawMessage(v))
		got, err := appendCompact([]byte("x"), json.RawMessage(v))
		if err != nil || !bytes.Equal(got[1:], want) {
			t.Errorf("%q: got %s (%v), want %s", v, got[1:], err, want)
		}
	}
}
