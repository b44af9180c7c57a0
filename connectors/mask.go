package connectors

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// A server may quote back what it was sent (a 401 naming the bearer token,
// a JSON-RPC error quoting the request's URL and headers), and its words
// end up in an error message or a refused step's fields. Masker is the one
// way those words lose the credentials before anyone reads them.

// Masker replaces secrets in text with "****".
type Masker struct{ r *strings.Replacer }

// NewMasker masks each secret at least min bytes long (a shorter one would
// garble the words around it more than it hides), and its path- and
// query-unescaped forms, longest first: a value that holds another is
// masked whole. With nothing to mask, Mask returns its text as it is.
func NewMasker(min int, secrets ...string) Masker {
	var vals []string
	add := func(s string) {
		if len(s) >= min {
			vals = append(vals, s)
		}
	}
	for _, s := range secrets {
		add(s)
		if u, err := url.PathUnescape(s); err == nil && u != s {
			add(u)
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s {
			add(u)
		}
	}
	if len(vals) == 0 {
		return Masker{}
	}
	slices.SortFunc(vals, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "****")
	}
	return Masker{strings.NewReplacer(pairs...)}
}

// JSONForms returns s and the other forms it takes inside a JSON string:
// escaped as encoding/json escapes it, with and without HTML escaping, and
// each of those with '/' written `\/`. A JSON document masked of them all
// stays JSON, since "****" needs no escaping.
func JSONForms(s string) []string {
	forms := []string{s}
	if !strings.ContainsAny(s, `"\<>&/`) && !hasControl(s) {
		return forms
	}
	add := func(f string) {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) == nil {
			quoted := strings.TrimSuffix(b.String(), "\n")
			add(quoted[1 : len(quoted)-1])
		}
	}
	// Encoders that escape '/' too (PHP's, by default).
	for _, f := range forms {
		if strings.Contains(f, "/") {
			add(strings.ReplaceAll(f, "/", `\/`))
		}
	}
	return forms
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x2028 || r == 0x2029 }) >= 0
}

// Mask returns s with the secrets masked.
func (m Masker) Mask(s string) string {
	if m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// HiddenURLParts returns the pieces of raw that ShownURL masks: its user
// information (and the password in it), and each path segment and query
// value it shows as ****, to mask wherever else they appear. A string that
// is no such URL has none.
func HiddenURLParts(raw string) []string {
	if !HoldsSecret(raw) {
		return nil
	}
	split := func(s string) (auth string, segs, query []string) {
		s, _, _ = strings.Cut(s, "#")
		s, q, _ := strings.Cut(s, "?")
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[i+3:]
			auth, s, _ = strings.Cut(s, "/")
		}
		return auth, strings.Split(s, "/"), strings.Split(q, "&")
	}
	auth, segs, query := split(raw)
	shownAuth, shownSegs, shownQuery := split(ShownURL(raw))
	var out []string
	if at := strings.LastIndexByte(auth, '@'); at >= 0 && shownAuth != auth {
		info := auth[:at]
		out = append(out, info)
		if _, pw, ok := strings.Cut(info, ":"); ok {
			out = append(out, pw)
		}
	}
	if len(segs) == len(shownSegs) {
		for i := range segs {
			if segs[i] != shownSegs[i] {
				out = append(out, segs[i])
			}
		}
	}
	if len(query) == len(shownQuery) {
		for i := range query {
			if query[i] != shownQuery[i] {
				// A parameter without "=" is masked whole (ShownURL).
				_, v, ok := strings.Cut(query[i], "=")
				if !ok {
					v = query[i]
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// Echo finds secrets a server quoted back in its answer (an echo endpoint,
// a 401 naming the token), in every form a JSON document may hold them
// (JSONForms), and masks them there. Make one per set of secrets; Quotes
// scans without allocating, so an answer without them costs a scan only.
type Echo struct {
	text  []string
	bytes [][]byte
}

// NewEcho finds each secret at least min bytes long.
func NewEcho(min int, secrets ...string) Echo {
	var e Echo
	for _, s := range secrets {
		if len(s) >= min {
			e.text = append(e.text, JSONForms(s)...)
		}
	}
	for _, s := range e.text {
		e.bytes = append(e.bytes, []byte(s))
	}
	return e
}

// Quotes reports whether b holds any of the secrets.
func (e Echo) Quotes(b []byte) bool {
	for _, f := range e.bytes {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// QuotedIn reports whether s holds any of the secrets.
func (e Echo) QuotedIn(s string) bool {
	for _, f := range e.text {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// Masker masks the secrets in every form Quotes finds (min is 0: each form
// was measured as its secret was).
func (e Echo) Masker() Masker { return NewMasker(0, e.text...) }
