package connectors

import (
	"encoding/json"
	"strings"
)

// MaskJSON returns b with the secrets masked. A JSON document is masked
// where it holds them as text, so that it stays JSON with the same shape:
// inside its strings, in every form JSONForms lists, and a number or
// literal that is a secret whole, which becomes the string "****". A
// number that only holds a secret's digits among others (a timestamp,
// another ID) is left as it is: replacing part of a number would leave no
// JSON at all. Anything else is masked as text. An answer without the
// secrets is only scanned, and returned as it is.
func (e Echo) MaskJSON(b []byte) []byte {
	if b == nil || !e.Quotes(b) {
		return b
	}
	m := e.Masker()
	if !json.Valid(b) {
		return []byte(m.Mask(string(b)))
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			j := stringEnd(b, i)
			out = append(out, e.maskString(m, b[i:j])...)
			i = j
		case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
			j := i + 1
			for j < len(b) && !strings.ContainsRune(" \t\r\n,:]}", rune(b[j])) {
				j++
			}
			if e.isSecret(b[i:j]) {
				out = append(out, `"****"`...)
			} else {
				out = append(out, b[i:j]...)
			}
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// stringEnd returns the index just past the JSON string literal that
// starts at b[i], in a valid document.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// maskString masks one JSON string literal, quotes included. Its text is
// masked; the forms replaced where they stand in the literal keep the rest
// of its bytes, and are taken when they read as that masked text. Where
// they do not (a secret's bare form matched across an escape of the text
// around it, "toke\n" for the secret `toke\`), the masked text is encoded
// again, and a literal whose text holds no secret is left as it is.
func (e Echo) maskString(m Masker, lit []byte) []byte {
	inner := lit[1 : len(lit)-1]
	if !e.Quotes(inner) {
		return lit
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return lit // not reached: the document is valid
	}
	text := m.Mask(s)
	masked := []byte(`"` + m.Mask(string(inner)) + `"`)
	if got := ""; json.Unmarshal(masked, &got) == nil && got == text {
		return masked
	}
	if text == s {
		return lit // the forms matched across escapes, the secret is not there
	}
	out, err := json.Marshal(text)
	if err != nil {
		return lit
	}
	return out
}

// isSecret reports whether tok is one of the secrets, whole.
func (e Echo) isSecret(tok []byte) bool {
	for _, f := range e.text {
		if f == string(tok) {
			return true
		}
	}
	return false
}
