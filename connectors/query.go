package connectors

import "strings"

// EscapeQuery percent-encodes what may not stand in a URL's query (RFC
// 3986 §3.4): a space, a quote, a bracket, non-ASCII text, a "%" that
// starts no escape. Escapes and reserved characters stay as written, since
// what they mean is the server's to read. url.Parse keeps a query as it
// was given, and net/http sends it so: a space would end the request
// target mid-line, and the server read the rest as the protocol version.
func EscapeQuery(q string) string {
	var b strings.Builder
	escaped := false // b holds q up to i, escaped
	for i := 0; i < len(q); i++ {
		c := q[i]
		if queryByte(c) || c == '%' && i+2 < len(q) && isHex(q[i+1]) && isHex(q[i+2]) {
			if escaped {
				b.WriteByte(c)
			}
			continue
		}
		if !escaped {
			b.WriteString(q[:i])
			escaped = true
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if !escaped {
		return q
	}
	return b.String()
}

// queryByte reports whether c may stand for itself in a query: unreserved,
// a sub-delimiter, ":", "@", "/" or "?".
func queryByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
