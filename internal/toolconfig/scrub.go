package toolconfig

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// A step's check reports what the tool's server said, and a server may
// say back what it was sent: a JSON-RPC error quoting the request's
// Authorization header, or its URL with the key in the query. Secrets are
// never returned (API.md), so the answer to a refused step has every
// secret value of that step's configuration masked in it, whoever wrote
// the words.

// minScrubbed is the shortest secret value scrubbed from a message:
// shorter ones would mangle the words around them more than they hide.
const minScrubbed = 4

// scrubSecrets masks in p's message and fields each secret value of the
// configuration being checked: the secret fields' values (each header's
// value too), and of a URL stored sealed, what ShownURL hides of it.
func scrubSecrets(p *problem.Error, secret map[string]any) *problem.Error {
	var vals []string
	add := func(s string) {
		if len(s) >= minScrubbed {
			vals = append(vals, s)
		}
		if u, err := url.PathUnescape(s); err == nil && u != s && len(u) >= minScrubbed {
			vals = append(vals, u)
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s && len(u) >= minScrubbed {
			vals = append(vals, u)
		}
	}
	for _, v := range secret {
		switch x := v.(type) {
		case string:
			add(x)
			for _, h := range hiddenParts(x) {
				add(h)
			}
		case map[string]string:
			for _, s := range x {
				add(s)
			}
		case map[string]any:
			for _, s := range x {
				add(asString(s))
			}
		}
	}
	if len(vals) == 0 {
		return p
	}
	// Longest first: a value that holds another is masked whole.
	slices.SortFunc(vals, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "****")
	}
	r := strings.NewReplacer(pairs...)
	out := *p
	out.Message = r.Replace(p.Message)
	if p.Fields != nil {
		out.Fields = make(map[string]string, len(p.Fields))
		for k, m := range p.Fields {
			out.Fields[k] = r.Replace(m)
		}
	}
	return &out
}

// hiddenParts returns the pieces of a URL that connectors.ShownURL masks:
// its user information, and each path segment and query value it shows as
// ****. A string that is no such URL has none.
func hiddenParts(raw string) []string {
	if !connectors.HoldsSecret(raw) {
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
	shownAuth, shownSegs, shownQuery := split(connectors.ShownURL(raw))
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
