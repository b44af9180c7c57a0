package calls

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// inexactMultipleOf returns raw without the multipleOf keywords whose value
// is not a whole number, or raw itself when it has none. The validator
// divides in floating point (jsonschema-go: math.Modf(x / multipleOf)), so
// with multipleOf 0.01 it refused 1.15 and 0.07, exact multiples. Such a
// keyword is checked exactly instead (exactMultiples) where it applies to
// a property (at any depth of properties), and elsewhere (under anyOf,
// items, ...) left to the tool, which judges its arguments itself, rather
// than refuse what it would take. A whole one (2, 1e3) is kept.
//
// A keyword is a member named multipleOf whose value is a number: a
// property of that name holds a schema (an object or a boolean), and the
// values of const, enum, default and examples are data, not schemas.
func inexactMultipleOf(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"multipleOf"`)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil || !dropInexact(doc) {
		return raw
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return raw
	}
	return out
}

// dropInexact deletes the inexact multipleOf keywords in the schema v, and
// reports whether it deleted one.
func dropInexact(v any) bool {
	dropped := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "const", "enum", "default", "examples":
				continue
			case "multipleOf":
				if n, ok := e.(json.Number); ok && !whole(n) {
					delete(x, k)
					dropped = true
					continue
				}
			}
			if dropInexact(e) {
				dropped = true
			}
		}
	case []any:
		for _, e := range x {
			if dropInexact(e) {
				dropped = true
			}
		}
	}
	return dropped
}

// whole reports whether n is a whole number, read exactly from its text.
func whole(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// exactMultiples checks, exactly on the numbers' text, the multipleOf
// keywords inexactMultipleOf took out of schema doc that apply to a
// property of args (properties, at any depth), and names the first
// property that is no multiple, with the sentence the validator's own
// refusal gets.
func exactMultiples(doc any, args json.RawMessage) map[string]string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var inst any
	if dec.Decode(&inst) != nil {
		return nil
	}
	return multiplesAt(doc, inst, "", "")
}

func multiplesAt(schema, inst any, field, path string) map[string]string {
	node, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	if m, ok := node["multipleOf"].(json.Number); ok && !whole(m) {
		if n, ok := inst.(json.Number); ok && field != "" && !multipleOf(n, m) {
			msg := "must be a multiple of " + string(m)
			if path != field {
				msg = path + " " + msg
			}
			return map[string]string{field: msg}
		}
	}
	props, _ := node["properties"].(map[string]any)
	obj, _ := inst.(map[string]any)
	for k, ps := range props {
		v, ok := obj[k]
		if !ok {
			continue
		}
		f, p := field, path+"."+k
		if field == "" {
			f, p = k, k
		}
		if bad := multiplesAt(ps, v, f, p); bad != nil {
			return bad
		}
	}
	return nil
}

// multipleOf reports whether n is a whole multiple of m, exactly.
func multipleOf(n, m json.Number) bool {
	x, ok1 := new(big.Rat).SetString(string(n))
	d, ok2 := new(big.Rat).SetString(string(m))
	if !ok1 || !ok2 || d.Sign() == 0 {
		return true // not for this check to judge
	}
	return x.Quo(x, d).IsInt()
}
