package mcpserver

import "encoding/json"

// A small JSON scanner for the fast path: it splits an object into its
// members without decoding them, and validates what it skips. parseCall
// used to decode the request into maps twice, which was a quarter of the
// fast path's own cost. It refuses more than encoding/json does (escaped
// or repeated keys), never less: a refusal only sends the request to the
// SDK.

// eachMember calls fn with each member of the JSON object that is all of
// b (whitespace around it allowed), the value as its exact text. It reports
// false if b is not such an object, a key holds an escape, or fn returned
// false.
func eachMember(b []byte, fn func(key string, value []byte) bool) bool {
	return walkObject(b, func(key []byte, plain bool, m member) bool {
		return plain && fn(string(key[1:len(key)-1]), b[m.value:m.end])
	})
}

// member is one member of an object: its key, decoded, and where its key
// starts, its value starts and its value ends in the object's text.
type member struct {
	key               string
	start, value, end int
}

// objectMembers splits the JSON object that is all of b (whitespace around
// it allowed) into its members, in order, keys decoded (escapes too, so
// "\u0069d" is "id"). ok is false if b is not such an object. Nesting is
// bounded by the caller: b was decoded, or checked by jsondepth.Exceeds, before.
func objectMembers(b []byte) (ms []member, ok bool) {
	ok = walkObject(b, func(key []byte, plain bool, m member) bool {
		m.key = string(key[1 : len(key)-1])
		if !plain && json.Unmarshal(key, &m.key) != nil {
			return false
		}
		ms = append(ms, m)
		return true
	})
	if !ok {
		return nil, false
	}
	return ms, true
}

// walkObject calls fn with each member of the JSON object that is all of b
// (whitespace around it allowed): key is the key's text, quotes included,
// plain whether it holds no escape, and m where the member lies (m.key is
// left empty). It reports false if b is not such an object or fn returned
// false.
func walkObject(b []byte, fn func(key []byte, plain bool, m member) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end, plain, ok := scanString(b, i)
		if !ok {
			return false
		}
		m := member{start: i}
		key := b[i:end]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		m.value = skipSpace(b, i+1)
		if m.end, ok = skipValue(b, m.value); !ok || !fn(key, plain, m) {
			return false
		}
		i = skipSpace(b, m.end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at b[i]. Nesting is bounded
// by the caller (jsondepth.Exceeds).
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				end, _, ok := scanString(b, i)
				if !ok {
					return i, false
				}
				i = skipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			end, ok := skipValue(b, i)
			if !ok {
				return i, false
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return i, false
			}
			if b[i] == closer {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	default:
		return skipNumber(b, i)
	}
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// skipNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// scanString returns the end of the string starting at b[i] (a quote), and
// whether it holds no escape. The body's UTF-8 was checked before.
func scanString(b []byte, i int) (end int, plain, ok bool) {
	plain = true
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, plain, true
		case c < 0x20:
			return i, false, false
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return i, false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false, false
				}
				i += 4
			default:
				return i, false, false
			}
		}
	}
	return i, false, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
