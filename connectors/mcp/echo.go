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

// echoForms are the forms of the tool's credentials a result may quote
// them in, each as text and as bytes to scan for, worked out once with the
// target (resolveTarget), since every call's result is scanned for them.
type echoForms struct {
	text  []string
	bytes [][]byte
}

// newEchoForms returns the forms, JSON-escaped ones among them
// (connectors.JSONForms), of each credential of at least minHidden bytes.
func newEchoForms(creds []string) echoForms {
	var f echoForms
	for _, c := range creds {
		if len(c) >= minHidden {
			f.text = append(f.text, connectors.JSONForms(c)...)
		}
	}
	for _, s := range f.text {
		f.bytes = append(f.bytes, []byte(s))
	}
	return f
}

// hideEchoed masks the tool's credentials where its server quoted them back
// in a result (an echo tool, a diagnostics tool listing the request's
// headers). Secrets are never returned: the result goes to whoever calls
// the tool, a read-only key included, is stored, and is replayed. A result
// without them is scanned, not copied, with no allocation; a tool with none
// costs nothing.
func (t *target) hideEchoed(res connectors.Result) connectors.Result {
	forms := t.echo
	if len(forms.text) == 0 || (!quotes(res.Content, forms.bytes) && !quotes(res.Structured, forms.bytes)) {
		return res
	}
	m := connectors.NewMasker(minHidden, forms.text...)
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
func quotes(b []byte, forms [][]byte) bool {
	for _, f := range forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}
