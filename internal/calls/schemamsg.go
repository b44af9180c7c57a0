package calls

// Sentences for invalid_arguments. The schema validator's errors are for
// programmers: a chain of "validating <schema path>: " prefixes ending in
// "<keyword>: <detail>", the detail written with Go's %v ("map[]", "+Inf",
// "[basic advanced]"). explain reads only the innermost schema path and
// keyword from that text, and writes the sentence itself from the schema and
// the value: the keyword says what rule failed, the schema what it asks for,
// the value where. An error it cannot read becomes a plain sentence that
// names no Go value.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxMessage bounds one field's message (a long pattern or enum list).
const maxMessage = 300

// wrapRE is one "validating <schema>: " layer of a validator error.
var wrapRE = regexp.MustCompile(`^validating (root|<anonymous schema>|.+?): `)

// keywordRE is the rule at the start of the innermost error.
var keywordRE = regexp.MustCompile(`^([A-Za-z]+)(?:\[[^\]]*\])?: `)

// gotTypeRE is the given value's type in a type error.
var gotTypeRE = regexp.MustCompile(`has type "([a-z]+)"`)

// nameRE is a property name written as it is in a path.
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// quotedRE finds the Go-quoted names in a required or additional
// properties error.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// explain says why value failed the schema doc (the schema as decoded JSON)
// according to verr, as the phrase that follows its subject ("must be a
// string, not a number") and where inside value the failure is ("a",
// "tags[1]"; "" for value itself).
func explain(doc, value any, verr error) (where, phrase string) {
	msg := verr.Error()
	path := "root"
	for {
		m := wrapRE.FindStringSubmatch(msg)
		if m == nil {
			break
		}
		path, msg = m[1], msg[len(m[0]):]
	}
	var tokens []string
	placed := true
	switch {
	case path == "root":
	case strings.HasPrefix(path, "/"):
		tokens = strings.Split(path[1:], "/")
		for i, t := range tokens { // RFC 6901: ~1 is '/', ~0 is '~', in that order
			tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		}
	default:
		doc, placed = nil, false // a schema named by its $id: its place is unknown
	}
	node, _ := nodeAt(doc, tokens).(map[string]any)
	at, inner, found := locate(doc, tokens, value)
	found = found && placed
	phrase = sentence(msg, node, inner, found)
	where = at
	if !found {
		phrase = "holds a value that " + phrase
	}
	if len(phrase) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(phrase[n]) { // cut between characters
			n--
		}
		phrase = phrase[:n] + "…"
	}
	return where, phrase
}

// sentence writes the rule msg names as a phrase. node is the schema that
// failed (nil if unknown), v the value it failed on (known when found).
func sentence(msg string, node map[string]any, v any, found bool) string {
	if strings.HasPrefix(msg, "unexpected additional properties ") {
		return "does not accept " + plural(quotedNames(msg), "the property", "the properties")
	}
	m := keywordRE.FindStringSubmatch(msg)
	if m == nil {
		return "is not valid for its schema"
	}
	num := func(key string) string { return numberText(node[key]) }
	switch kw := m[1]; kw {
	case "type":
		return typeSentence(node, msg, v, found)
	case "enum":
		if list, ok := node["enum"].([]any); ok && len(list) > 0 {
			if len(list) == 1 {
				return "must be " + valueText(list[0])
			}
			return "must be one of " + valueList(list)
		}
		return "must be one of the values its schema lists"
	case "const":
		if c, ok := node["const"]; ok {
			return "must be " + valueText(c)
		}
		return "must be the one value its schema allows"
	case "multipleOf":
		return "must be a multiple of " + num(kw)
	case "minimum":
		return "must be at least " + num(kw)
	case "maximum":
		return "must be at most " + num(kw)
	case "exclusiveMinimum":
		return "must be greater than " + num(kw)
	case "exclusiveMaximum":
		return "must be less than " + num(kw)
	case "minLength":
		return "must be at least " + count(node[kw], "character") + " long"
	case "maxLength":
		return "must be at most " + count(node[kw], "character") + " long"
	case "pattern":
		if p, ok := node["pattern"].(string); ok {
			return "must match the pattern " + p
		}
		return "does not match the pattern its schema sets"
	case "minItems":
		return "must have at least " + count(node[kw], "item")
	case "maxItems":
		return "must have at most " + count(node[kw], "item")
	case "uniqueItems":
		return "must not hold the same item twice"
	case "contains":
		return "must hold an item that matches its schema"
	case "minContains":
		return "must hold at least " + count(node[kw], "item") + " that match its schema"
	case "maxContains":
		return "must hold at most " + count(node[kw], "item") + " that match its schema"
	case "minProperties":
		return "must have at least " + count(node[kw], "property")
	case "maxProperties":
		return "must have at most " + count(node[kw], "property")
	case "required":
		return "is missing " + plural(quotedNames(msg), "the property", "the properties")
	case "dependentRequired":
		names := quotedNames(msg)
		if len(names) >= 2 {
			return "must have " + plural(names[1:], "the property", "the properties") + " when it has " + names[0]
		}
		return "is missing a property another one needs"
	case "anyOf":
		return "does not match any of the forms its schema allows"
	case "oneOf":
		if strings.Contains(msg, "validated against both") {
			return "matches more than one of the forms its schema allows, and must match exactly one"
		}
		return "does not match any of the forms its schema allows"
	case "not":
		return "is a value its schema rules out"
	}
	return "is not valid for its schema"
}

// typeSentence says which JSON types are wanted and, when known, which one
// was given.
func typeSentence(node map[string]any, msg string, v any, found bool) string {
	var want []string
	switch t := node["type"].(type) {
	case string:
		want = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				want = append(want, s)
			}
		}
	}
	if len(want) == 0 {
		return "is not of a type its schema allows"
	}
	numeric := false
	for _, w := range want {
		numeric = numeric || w == "number" || w == "integer"
	}
	if f, ok := v.(float64); found && ok && numeric {
		switch {
		case math.IsInf(f, 0) || math.IsNaN(f):
			return "must be a finite number"
		case f != math.Trunc(f):
			return "must be " + typeList(want) + ", not a fraction"
		}
	}
	got := ""
	if found {
		got = jsonTypeOf(v)
	} else if m := gotTypeRE.FindStringSubmatch(msg); m != nil {
		got = m[1]
	}
	if got == "" {
		return "must be " + typeList(want)
	}
	return "must be " + typeList(want) + ", not " + article(got)
}

// jsonTypeOf names the JSON type of a decoded value (integers count as
// numbers: no one is told "not an integer" when a string was wanted).
func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	case "string", "number", "boolean":
		return "a " + t
	}
	return "a value of another type"
}

// typeList writes the wanted types: "a string", "a string, number or
// boolean" (the article of the first only, as a person would say it).
func typeList(types []string) string {
	parts := append([]string(nil), types...)
	parts[0] = article(parts[0])
	return orList(parts)
}

func orList(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// valueList writes an enum's values, plainly when they are simple words
// ("basic, advanced"), else as JSON.
func valueList(list []any) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = valueText(v)
	}
	return strings.Join(parts, ", ")
}

var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9_.:/+-]+$`)

func valueText(v any) string {
	if s, ok := v.(string); ok && plainWordRE.MatchString(s) {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "the value its schema names"
	}
	return string(b)
}

// numberText writes a schema's number as the schema wrote it.
func numberText(v any) string {
	switch n := v.(type) {
	case json.Number:
		return n.String()
	case float64:
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return "the bound its schema sets"
}

// count writes "1 item", "3 items" from a schema's number.
func count(v any, noun string) string {
	s := numberText(v)
	if s == "1" {
		return s + " " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return s + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return s + " " + noun + "s"
}

func quotedNames(msg string) []string {
	var names []string
	for _, q := range quotedRE.FindAllString(msg, -1) {
		if s, err := strconv.Unquote(q); err == nil {
			names = append(names, s)
		}
	}
	return names
}

func plural(names []string, one, many string) string {
	switch len(names) {
	case 0:
		return "a property"
	case 1:
		return one + " " + names[0]
	}
	return many + " " + strings.Join(names, ", ")
}

// nodeAt follows JSON Pointer tokens (unescaped, as the validator prints
// them) through a decoded schema.
func nodeAt(doc any, tokens []string) any {
	for _, tok := range tokens {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// locate follows the schema path through the value as far as it goes down
// into it (properties, additionalProperties, items, prefixItems), returning
// where it got, the value there, and whether the whole path was followed.
// For additionalProperties and items, the member is the first whose value
// fails the subschema.
func locate(doc any, tokens []string, v any) (string, any, bool) {
	var where strings.Builder
	node, _ := doc.(map[string]any)
	for i := 0; i < len(tokens); {
		if node == nil {
			return where.String(), v, false
		}
		switch tok := tokens[i]; {
		case tok == "properties" && i+1 < len(tokens):
			name := tokens[i+1]
			obj, ok := v.(map[string]any)
			props, _ := node["properties"].(map[string]any)
			if !ok || props == nil {
				return where.String(), v, false
			}
			appendName(&where, name)
			node, _ = props[name].(map[string]any)
			v, i = obj[name], i+2
		case tok == "additionalProperties":
			obj, ok := v.(map[string]any)
			sub, _ := node[tok].(map[string]any)
			if !ok || sub == nil || node["patternProperties"] != nil {
				return where.String(), v, false
			}
			props, _ := node["properties"].(map[string]any)
			var names []string
			for k := range obj {
				if _, declared := props[k]; !declared {
					names = append(names, k)
				}
			}
			sort.Strings(names)
			k, ok := firstFailing(sub, len(names), func(j int) any { return obj[names[j]] })
			if !ok {
				return where.String(), v, false
			}
			appendName(&where, names[k])
			node, v, i = sub, obj[names[k]], i+1
		case tok == "items" || tok == "prefixItems" && i+1 < len(tokens):
			arr, ok := v.([]any)
			if !ok {
				return where.String(), v, false
			}
			var idx int
			if tok == "prefixItems" {
				list, _ := node[tok].([]any)
				n, err := strconv.Atoi(tokens[i+1])
				if err != nil || n < 0 || n >= len(list) || n >= len(arr) {
					return where.String(), v, false
				}
				idx, i = n, i+2
				node, _ = list[n].(map[string]any)
			} else {
				sub, _ := node[tok].(map[string]any)
				start := 0
				if pre, ok := node["prefixItems"].([]any); ok {
					start = len(pre)
				}
				if sub == nil || start >= len(arr) {
					return where.String(), v, false
				}
				k, ok := firstFailing(sub, len(arr)-start, func(j int) any { return arr[start+j] })
				if !ok {
					return where.String(), v, false
				}
				idx, node, i = start+k, sub, i+1
			}
			fmt.Fprintf(&where, "[%d]", idx)
			v = arr[idx]
		default:
			return where.String(), v, false
		}
	}
	return where.String(), v, true
}

// firstFailing returns the first of n values that sub refuses. A subschema
// that refers elsewhere cannot be judged alone; then only a single value is
// known to be the one.
func firstFailing(sub map[string]any, n int, value func(int) any) (int, bool) {
	raw, err := json.Marshal(sub)
	if err != nil {
		return 0, false
	}
	var s jsonschema.Schema
	var r *jsonschema.Resolved
	if !bytes.Contains(raw, []byte(`"$ref"`)) && !bytes.Contains(raw, []byte(`"$dynamicRef"`)) && json.Unmarshal(raw, &s) == nil {
		r, _ = s.Resolve(nil)
	}
	if r == nil {
		return 0, n == 1
	}
	for j := 0; j < n; j++ {
		if r.Validate(value(j)) != nil {
			return j, true
		}
	}
	return 0, false
}

// appendName adds a property name to a path: a.b, or a."odd name".
func appendName(b *strings.Builder, name string) {
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	if nameRE.MatchString(name) {
		b.WriteString(name)
		return
	}
	q, _ := json.Marshal(name)
	b.Write(q)
}
