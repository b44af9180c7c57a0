package mcp

import (
	"encoding/json"
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
func (t *target) hideEchoed(res connectors.Result) connectors.Result {
	if !t.echo.Quotes(res.Content) && !t.echo.Quotes(res.Structured) {
		return res
	}
	m := t.echo.Masker()
	mask := func(b json.RawMessage) json.RawMessage {
		if b == nil {
			return nil
		}
		return json.RawMessage(m.Mask(string(b)))
	}
	res.Content, res.Structured = mask(res.Content), mask(res.Structured)
	return res
}
