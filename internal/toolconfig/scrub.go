package toolconfig

import (
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
// value too), and of a URL stored sealed, what ShownURL hides of it
// (connectors.HiddenURLParts).
func scrubSecrets(p *problem.Error, secret map[string]any) *problem.Error {
	var vals []string
	for _, v := range secret {
		switch x := v.(type) {
		case string:
			vals = append(append(vals, x), connectors.HiddenURLParts(x)...)
		case map[string]string:
			for _, s := range x {
				vals = append(vals, s)
			}
		case map[string]any:
			for _, s := range x {
				vals = append(vals, asString(s))
			}
		}
	}
	m := connectors.NewMasker(minScrubbed, vals...)
	out := *p
	out.Message = m.Mask(p.Message)
	if p.Fields != nil {
		out.Fields = make(map[string]string, len(p.Fields))
		for k, f := range p.Fields {
			out.Fields[k] = m.Mask(f)
		}
	}
	return &out
}
