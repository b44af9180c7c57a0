package toolconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/editdistance"
	"github.com/quiverhq/quiver/internal/problem"
)

// maxFieldBytes bounds one answer, so a form cannot be used to store blobs.
const maxFieldBytes = 16 << 10

// validateStep checks a user's answers against a form step. It returns the
// accepted values (JSON values, defaults filled in) or a message per bad field.
// A blank string answers an optional field, or one with a default, as if it
// were left out, the way a form sends an input the user did not fill in (or
// a choice left untouched). A field with a required_when
// condition (see catalog.Field) is then checked against the values of the
// fields it depends on.
func validateStep(step *catalog.Step, answers map[string]json.RawMessage) (map[string]any, map[string]string) {
	values := map[string]any{}
	bad := map[string]string{}
	for _, f := range step.Fields {
		raw, given := answers[f.Name]
		if given && (len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || ((!f.Required || f.Default != "") && isBlank(raw))) {
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
	checkConditions(step, values, bad)
	return values, bad
}

// checkConditions applies the fields' required_when rules to the values
// validateStep accepted. A field given where it is not used is refused, not
// dropped, as an answer that is no field of the step is (strayAnswers): the
// user meant something by it, and a stray value usually means a forgotten
// choice, such as a token sent without auth_type, which defaults to none.
// Dropping it would store a configuration other than the one they sent.
func checkConditions(step *catalog.Step, values map[string]any, bad map[string]string) {
	value := func(name string) (string, bool) {
		s, ok := values[name].(string)
		return s, ok && bad[name] == ""
	}
	for i := range step.Fields {
		f := &step.Fields[i]
		if !f.Conditional() || bad[f.Name] != "" {
			continue
		}
		used, known := f.Used(value)
		_, given := values[f.Name]
		switch {
		case !known:
		case used && !given:
			bad[f.Name] = "is required when " + f.Condition()
		case !used && given:
			bad[f.Name] = "is only used when " + f.Condition() + "; leave it out"
		}
	}
}

// isBlank reports whether raw is a JSON string of only white space.
func isBlank(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) == ""
}

// strayAnswers names each answer that is meant for a field the current
// step does not have, with a sentence saying where it belongs; an answer
// under a name no step has is ignored, as API.md ignores unknown fields
// ("Unknown JSON fields in a request are ignored"), unless it is so near
// one of the step's fields that it means that field. Dropping those
// silently would store a configuration other than the one sent:
//
//   - a field of an earlier step is stale, typically a client retrying a step
//     whose success it never heard of; accepting it would complete the
//     current step with whatever defaults it has;
//   - a field of a later step is early; accepting the current step would drop
//     it, and the step that takes it might then complete with its defaults
//     (auth_type none), so the tool would go live without what was sent;
//   - a misspelling of one of the step's fields (Token, authType, tokn)
//     would leave that field unanswered, or at its default.
//
// Its value does not matter: a blank or null answer under such a name is
// the same mistake.
func strayAnswers(steps []catalog.Step, current int, answers map[string]json.RawMessage) map[string]string {
	bad := map[string]string{}
	at := &steps[current]
	here := fmt.Sprintf("step %d (%s)", current+1, at.ID)
	for name := range answers {
		if _, ok := at.Field(name); ok {
			continue
		}
		owner := -1
		for i := range steps {
			if _, ok := steps[i].Field(name); ok && i != current {
				owner = i
				break
			}
		}
		switch {
		case owner >= 0 && owner < current:
			bad[name] = fmt.Sprintf("is not a field of %s but of step %d (%s), which is already answered; this tool is at step %d of %d",
				here, owner+1, steps[owner].ID, current+1, len(steps))
		case owner > current:
			bad[name] = fmt.Sprintf("is not a field of %s but of step %d (%s), which comes later; this tool is at step %d of %d, so send it once that step is asked for",
				here, owner+1, steps[owner].ID, current+1, len(steps))
		default:
			if msg, ok := misspelled(at, here, name); ok {
				bad[name] = msg
			}
		}
	}
	return bad
}

// misspelled says that name is no field of step at but most likely means
// one, and false when it is near none (an unknown field, ignored).
func misspelled(at *catalog.Step, here, name string) (string, bool) {
	names := make([]string, len(at.Fields))
	for i, f := range at.Fields {
		names[i] = f.Name
	}
	guess, ok := likelyField(names, name)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("is not a field of %s; did you mean %q? Its fields are %s", here, guess, strings.Join(names, ", ")), true
}

// foldName sets case and separators aside (Token, authType, base-url).
var foldName = strings.NewReplacer("_", "", "-", "", " ", "", ".", "")

// maxGuessed bounds the length of a name likelyField looks at: no field
// name is near a longer one, and a long name must not cost a long time.
const maxGuessed = 64

// likelyField returns the field name that name most likely misspells: the
// one nearest to it once case and separators are set aside (Token, authType,
// base-url, tokn, header for headers), if one is clearly nearest.
func likelyField(names []string, name string) (string, bool) {
	if len(name) > maxGuessed {
		return "", false
	}
	want := strings.ToLower(foldName.Replace(name))
	limit := 1
	if len(want) > 5 {
		limit = 2
	}
	best, bestD, ties := "", limit+1, 0
	for _, n := range names {
		f := strings.ToLower(foldName.Replace(n))
		if abs(len(f)-len(want)) > limit {
			continue // the distance is at least the difference in length
		}
		switch d := editdistance.Levenshtein(f, want); {
		case d < bestD:
			best, bestD, ties = n, d, 1
		case d == bestD:
			ties++
		}
	}
	return best, best != "" && ties == 1
}

func abs(n int) int { return max(n, -n) }

func parseField(f *catalog.Field, raw json.RawMessage) (any, string) {
	switch f.Type {
	case catalog.FieldObject:
		var obj map[string]string
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, "must be an object of string values"
		}
		// An object field is a set of request headers (custom-mcp's
		// headers). Names are judged in order so the message is the same
		// on every run.
		seen := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			v := obj[k]
			// What a name may be beyond this is the connector's to say
			// (an MCP server's headers: HTTP tokens, resolveTarget).
			if strings.TrimSpace(k) == "" || strings.Contains(k, ":") || hasControl(k) {
				return nil, fmt.Sprintf("has an invalid name %s", problem.Quote(k))
			}
			// Header names ignore case: of two that differ only in it, one
			// value alone could be sent, and which one would be chance.
			if other, dup := seen[strings.ToLower(k)]; dup {
				return nil, fmt.Sprintf("names one header more than once, as %s and %s (header names ignore case): give it once",
					problem.Quote(other), problem.Quote(k))
			}
			seen[strings.ToLower(k)] = k
			if hasControl(v) {
				return nil, fmt.Sprintf("has a value for %s that is not one line of text (it holds a control character)", problem.Quote(k))
			}
			// HTTP strips a header value's surrounding space before any
			// server sees it, so such a value would be sent otherwise than
			// given (and, pasted, is a credential with its neighbour's space).
			if v != strings.TrimSpace(v) {
				return nil, fmt.Sprintf("has a value for %s that begins or ends with a space, which HTTP drops: give it without", problem.Quote(k))
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
	if f.Type == catalog.FieldURL && !f.Secret {
		// No URL begins or ends with white space: a pasted one carries its
		// neighbour's (a space, the line break), and means the URL without.
		s = strings.TrimSpace(s)
	}
	if f.Required && strings.TrimSpace(s) == "" {
		return nil, "is required"
	}
	// Every string a form takes is one line: a credential, a name, a URL.
	// A control character would make a header no client sends, and U+0000
	// one Postgres cannot store.
	if hasControl(s) {
		return nil, "must be one line of text, without control characters"
	}
	// No credential begins or ends with a space, but one copied with its
	// neighbour does, and would be refused only at the first call (or
	// never, by a tool that checks nothing at configuration).
	if f.Secret && s != strings.TrimSpace(s) {
		return nil, "begins or ends with a space, which no credential does: paste it without"
	}
	switch f.Type {
	case catalog.FieldURL:
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u.Port()) {
			return nil, "must be an http:// or https:// URL with a host and, if it names a port, one from 1 to 65535"
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

// hasControl reports whether s holds a C0 control character or DEL.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// validPort reports whether p, a URL's port, is absent or 1 to 65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
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

// sealed reports whether a field's value is stored sealed with the
// secrets: a secret field's always, and a URL's when it holds what may be a
// credential (connectors.HoldsSecret: a query, user information, a token in
// its path), where servers commonly take their keys.
func sealed(f *catalog.Field, v any) bool {
	if f.Secret {
		return true
	}
	s, ok := v.(string)
	return ok && f.Type == catalog.FieldURL && connectors.HoldsSecret(s)
}

// mask returns what a field's value shows on read: a secret field's masked
// whole, a URL as connectors.ShownURL shows it (what may be a credential
// masked, the rest kept, so a person can tell which URL it is), anything
// else as it is.
func mask(f *catalog.Field, v any) any {
	if f.Type == catalog.FieldURL && !f.Secret {
		if s, ok := v.(string); ok {
			return connectors.ShownURL(s)
		}
		return v
	}
	if !f.Secret {
		return v
	}
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
