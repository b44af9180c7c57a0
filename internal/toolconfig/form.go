package toolconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/quiverhq/quiver/catalog"
)

// maxFieldBytes bounds one answer, so a form cannot be used to store blobs.
const maxFieldBytes = 16 << 10

// validateStep checks a user's answers against a form step. It returns the
// accepted values (JSON values, defaults filled in) or a message per bad field.
func validateStep(step *catalog.Step, answers map[string]json.RawMessage) (map[string]any, map[string]string) {
	values := map[string]any{}
	bad := map[string]string{}
	for _, f := range step.Fields {
		raw, given := answers[f.Name]
		if given && (len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))) {
			given = false
		}
		if !given {
			switch {
			case f.Default != "":
				values[f.Name] = f.Default
			case f.Required:
				bad[f.Name] = "is required"
			}
			continue
		}
		if len(raw) > maxFieldBytes {
			bad[f.Name] = fmt.Sprintf("must be at most %d bytes", maxFieldBytes)
			continue
		}
		v, msg := parseField(&f, raw)
		if msg != "" {
			bad[f.Name] = msg
			continue
		}
		values[f.Name] = v
	}
	return values, bad
}

func parseField(f *catalog.Field, raw json.RawMessage) (any, string) {
	switch f.Type {
	case catalog.FieldObject:
		var obj map[string]string
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, "must be an object of string values"
		}
		for k := range obj {
			if strings.TrimSpace(k) == "" || strings.ContainsAny(k, "\r\n:") {
				return nil, fmt.Sprintf("has an invalid name %q", k)
			}
		}
		return obj, ""
	case catalog.FieldBoolean:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, "must be true or false"
		}
		return b, ""
	case catalog.FieldInteger:
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&n); err != nil {
			return nil, "must be an integer"
		}
		if _, err := n.Int64(); err != nil {
			return nil, "must be an integer"
		}
		return n, ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, "must be a string"
	}
	if f.Required && strings.TrimSpace(s) == "" {
		return nil, "is required"
	}
	switch f.Type {
	case catalog.FieldURL:
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "must be an http:// or https:// URL"
		}
	case catalog.FieldEnum:
		ok := false
		for _, o := range f.Options {
			ok = ok || o == s
		}
		if !ok {
			return nil, "must be one of " + strings.Join(f.Options, ", ")
		}
	}
	if !f.Matches(s) {
		return nil, fmt.Sprintf("does not match the pattern %s", f.Pattern)
	}
	return s, ""
}

// literalPrefix returns the literal text a pattern anchors at its start
// ("^tvly-" → "tvly-"): showing it masks nothing the catalog did not publish.
func literalPrefix(pattern string) string {
	if !strings.HasPrefix(pattern, "^") {
		return ""
	}
	var b strings.Builder
	for _, r := range pattern[1:] {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mask returns what a secret field's value shows on read.
func mask(f *catalog.Field, v any) any {
	if obj, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(obj))
		for k := range obj {
			out[k] = "****"
		}
		return out
	}
	return literalPrefix(f.Pattern) + "****"
}

// asString renders a stored value the way connectors receive it.
func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
