package connectors

import "strings"

// A tool's URL is configuration a person reads back, in a tool's view, an
// error message or a log line, but servers commonly take their credentials
// in it: in the query (…/mcp?apiKey=…), in the user information
// (https://user:password@host/…), or as a segment of the path
// (…/api/mcp/s/<token>/mcp, as hosted MCP gateways hand out). ShownURL is
// the one place that says what of such a URL may be shown; HoldsSecret says
// whether it hides anything, so that the URL is then stored sealed.
//
//	https://u:p@mcp.example.com/s/Zk3q9v0aTr51xW8y/mcp?apiKey=abc&region=eu#x
//	https://****@mcp.example.com/s/****/mcp?apiKey=****&region=****

// masked stands for what ShownURL hides.
const masked = "****"

// minSecretSegment is the shortest path segment that can be taken for a
// credential. Shorter ones with letters and digits are everyday path parts
// (v1, 2025-06-18, mcp2); a key or token is longer.
const minSecretSegment = 16

// ShownURL returns raw with every part that may be a credential masked: the
// user information whole, each query parameter's value (a parameter
// without "=" whole; keys stay, so a person can tell which URL it is), and
// each path segment that looks like a token (see secretSegment). The
// fragment, which is never sent, goes. Hosts, ports and the rest of the
// path stay as they were written.
func ShownURL(raw string) string {
	shown, _ := shownURL(raw)
	return shown
}

// HoldsSecret reports whether ShownURL hides anything of raw besides its
// fragment.
func HoldsSecret(raw string) bool {
	_, hid := shownURL(raw)
	return hid
}

func shownURL(raw string) (string, bool) {
	u, _, _ := strings.Cut(raw, "#")
	rest, query, hasQuery := strings.Cut(u, "?")
	var b strings.Builder
	b.Grow(len(u))
	hid := false

	// scheme://authority
	if i := strings.Index(rest, "://"); i >= 0 {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		authority, path := rest, ""
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			authority, path = rest[:j], rest[j:]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			b.WriteString(masked)
			authority = authority[at:]
			hid = true
		}
		b.WriteString(authority)
		rest = path
	}

	// the path, a segment at a time
	for i, seg := range strings.Split(rest, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if secretSegment(seg) {
			b.WriteString(masked)
			hid = true
		} else {
			b.WriteString(seg)
		}
	}

	if !hasQuery {
		return b.String(), hid
	}
	b.WriteByte('?')
	for i, part := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		if key, _, ok := strings.Cut(part, "="); ok {
			b.WriteString(key)
			b.WriteByte('=')
		}
		if part != "" {
			b.WriteString(masked)
			hid = true
		}
	}
	return b.String(), hid
}

// secretSegment reports whether a path segment looks like a credential: at
// least minSecretSegment characters, holding a letter and a digit, or
// letters of both cases (a random base62 token of 16 characters has no
// digit about one time in twenty, and one case only about one in 10^6).
// Percent-escapes are not counted. It errs towards hiding: a long slug with
// a number in it ("release-notes-2026") or a CamelCase name is masked too,
// which costs only how the URL reads, while a token shown would be a leak.
func secretSegment(seg string) bool {
	if len(seg) < minSecretSegment {
		return false
	}
	var lower, upper, digit bool
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c == '%' && i+2 < len(seg):
			i += 2 // an escape's hex digits say nothing of the segment
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return (lower || upper) && digit || lower && upper
}
