package calls

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The canonicalizer's strings: scanning, unescaping and re-escaping
// (see the comment at the top of canonical.go).

// strSafe reports whether json.Marshal writes the ASCII byte b unchanged
// inside a string.
func strSafe(b byte) bool {
	if b < 0x40 {
		return strSafeLo>>b&1 != 0
	}
	return b < utf8.RuneSelf && strSafeHi>>(b-0x40)&1 != 0
}

// str writes the string starting at doc[pos] the way json.Marshal writes its
// decoded value. Runs of bytes that json.Marshal writes unchanged are copied
// as they are; escape sequences and other bytes are decoded and re-encoded.
// If that changed anything (escaped reports it) and the string is a key, its
// decoded value is appended to keys.
func (c *canonicalizer) str(isKey bool) (escaped bool, err error) {
	doc := c.doc
	c.out = append(c.out, '"')
	run := c.pos + 1 // start of the bytes to copy as they are
	i := run
	for {
		for i < len(doc) {
			b := doc[i]
			if b < utf8.RuneSelf {
				if !strSafe(b) {
					break
				}
				i++
				continue
			}
			r, size := utf8.DecodeRune(doc[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				break
			}
			i += size
		}
		if i >= len(doc) {
			return false, c.errEOF()
		}
		c.out = append(c.out, doc[run:i]...)
		if escaped && isKey {
			c.keys = append(c.keys, doc[run:i]...)
		}
		b := doc[i]
		if b == '"' {
			c.out = append(c.out, '"')
			c.pos = i + 1
			return escaped, nil
		}
		if !escaped && isKey {
			c.keys = append(c.keys, doc[c.pos+1:i]...)
		}
		escaped = true
		var r rune
		switch {
		case b < 0x20:
			c.pos = i
			return false, c.errChar("in string literal")
		case b == '\\':
			c.pos = i
			if r, err = c.escape(); err != nil {
				return false, err
			}
			i = c.pos
		case b < utf8.RuneSelf:
			r = rune(b)
			i++
		default:
			var size int
			if r, size = utf8.DecodeRune(doc[i:]); r == utf8.RuneError && size == 1 {
				c.pos = i
				return false, fmt.Errorf("invalid UTF-8 in string literal (offset %d)", i)
			}
			i += size
		}
		c.emit(r, isKey)
		run = i
	}
}

// escape decodes the escape sequence at doc[pos] like encoding/json, except
// for lone surrogates: a surrogate pair is one rune, any other surrogate is
// returned as itself (a code unit in 0xD800–0xDFFF, which emit writes as
// an escape).
func (c *canonicalizer) escape() (rune, error) {
	doc := c.doc
	if c.pos+1 >= len(doc) {
		return 0, c.errEOF()
	}
	c.pos++
	switch doc[c.pos] {
	case '"', '\\', '/':
		c.pos++
		return rune(doc[c.pos-1]), nil
	case 'b':
		c.pos++
		return '\b', nil
	case 'f':
		c.pos++
		return '\f', nil
	case 'n':
		c.pos++
		return '\n', nil
	case 'r':
		c.pos++
		return '\r', nil
	case 't':
		c.pos++
		return '\t', nil
	case 'u':
		c.pos++
		r, err := c.hex4()
		if err != nil {
			return 0, err
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		if c.pos+6 <= len(doc) && doc[c.pos] == '\\' && doc[c.pos+1] == 'u' {
			save := c.pos
			c.pos += 2
			if r2, err := c.hex4(); err == nil {
				if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
					return pair, nil
				}
			}
			c.pos = save
		}
		return r, nil
	}
	return 0, c.errChar("in string escape code")
}

func (c *canonicalizer) hex4() (rune, error) {
	var r rune
	for range 4 {
		if c.pos >= len(c.doc) {
			return 0, c.errEOF()
		}
		b := c.doc[c.pos]
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, c.errChar("in \\u hexadecimal character escape")
		}
		r = r<<4 | rune(b)
		c.pos++
	}
	return r, nil
}

// emit writes the decoded rune r as json.Marshal does and, for a key,
// appends it to keys. A lone surrogate r is written as its escape, in lower
// case, and kept in keys as its generalized UTF-8 (WTF-8) bytes, which no
// valid UTF-8 string contains: a key holding one equals no other key, and
// sorts by code point like the rest.
func (c *canonicalizer) emit(r rune, isKey bool) {
	if utf16.IsSurrogate(r) {
		c.lone = true
		if isKey {
			c.keys = append(c.keys, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
		}
		c.out = append(c.out, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
		return
	}
	if isKey {
		c.keys = utf8.AppendRune(c.keys, r)
	}
	if r >= utf8.RuneSelf {
		if r == '\u2028' || r == '\u2029' {
			c.out = append(c.out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			return
		}
		c.out = utf8.AppendRune(c.out, r)
		return
	}
	b := byte(r)
	switch {
	case strSafe(b):
		c.out = append(c.out, b)
	case b == '\\' || b == '"':
		c.out = append(c.out, '\\', b)
	case b == '\b':
		c.out = append(c.out, '\\', 'b')
	case b == '\f':
		c.out = append(c.out, '\\', 'f')
	case b == '\n':
		c.out = append(c.out, '\\', 'n')
	case b == '\r':
		c.out = append(c.out, '\\', 'r')
	case b == '\t':
		c.out = append(c.out, '\\', 't')
	default:
		c.out = append(c.out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
	}
}
