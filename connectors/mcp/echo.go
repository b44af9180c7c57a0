package mcp

import (
	"strings"

	"github.com/quiverhq/quiver/connectors"
)

// credentials are the secrets Quiver sends the tool's server: the
// Authorization value's token (a bearer token or an OAuth access token)
// and each configured header value.
func (t *target) credentials() []string {
	var out []string
	if t.auth != "" {
		if _, tok, ok := strings.Cut(t.auth, " "); ok {
			out = append(out, tok)
		} else {
			out = append(out, t.auth)
		}
	}
	for _, v := range t.headers {
		out = append(out, v)
	}
	return out
}

// hideEchoed masks the tool's credentials where its server quoted them back
// in a result (an echo tool, a diagnostics tool listing the request's
// headers). Secrets are never returned: the result goes to whoever calls
// the tool, a read-only key included, is stored, and is replayed. The
// credentials' forms are worked out once with the target (t.echo,
// resolveTarget); a result without them is scanned with no allocation.
// The result stays JSON (MaskJSON): a configured header value that is a
// number (an organisation's ID, say) is masked where the result holds it
// as that number, not inside other numbers.
func (t *target) hideEchoed(res connectors.Result) connectors.Result {
	res.Content, res.Structured = t.echo.MaskJSON(res.Content), t.echo.MaskJSON(res.Structured)
	return res
}
