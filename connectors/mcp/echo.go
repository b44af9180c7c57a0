package mcp

import (
	"bytes"
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
// the tool, a read-only key included, is stored, and is replayed. A result
// without them is scanned, not copied; a tool with none costs nothing.
func (t *target) hideEchoed(res connectors.Result) connectors.Result {
	creds := t.credentials()
	if len(creds) == 0 {
		return res
	}
	var forms []string
	for _, c := range creds {
		if len(c) >= minHidden {
			forms = append(forms, connectors.JSONForms(c)...)
		}
	}
	if !quotes(res.Content, forms) && !quotes(res.Structured, forms) {
		return res
	}
	m := connectors.NewMasker(minHidden, forms...)
	mask := func(b json.RawMessage) json.RawMessage {
		if b == nil {
			return nil
		}
		return json.RawMessage(m.Mask(string(b)))
	}
	res.Content, res.Structured = mask(res.Content), mask(res.Structured)
	return res
}

// quotes reports whether b holds any of forms.
func quotes(b []byte, forms []string) bool {
	for _, f := range forms {
		if bytes.Contains(b, []byte(f)) {
			return true
		}
	}
	return false
}
