package mcpserver

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// appendQuoted appends s as a JSON string exactly as json.Marshal writes a
// string (HTML-escaped, U+2028 and U+2029 escaped, each byte that is not
// UTF-8 as U+FFFD), without the string, the encoder and the validation
// that json.Marshal allocates and runs for each call's text.
func appendQuoted[T ~[]byte | ~string](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		r, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// appendCompact appends the valid JSON raw as json.Marshal writes a
// RawMessage: as it is when it has no white space and nothing to escape
// (no <, >, & or U+2028/U+2029), the usual case, else through json.Marshal.
func appendCompact(dst []byte, raw json.RawMessage) ([]byte, error) {
	if !bytes.ContainsAny(raw, " \t\r\n<>&") && bytes.IndexByte(raw, 0xE2) < 0 { // U+2028 and U+2029 start with E2
		return append(dst, raw...), nil
	}
	b, err := json.Marshal(raw)
	return append(dst, b...), err
}
