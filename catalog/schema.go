package catalog

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// jsonTypes are the types JSON Schema has.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// resolveSchema checks an action's input schema, as JSON, the way the call
// path reads it (internal/calls): a schema its validator cannot resolve is
// not enforced there, and the tool would get its arguments unchecked. The
// validator takes an unknown type name as a type no value has, so the
// types are checked too (schemaTypes).
func (v *validator) resolveSchema(raw json.RawMessage, schema map[string]any, at string) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		v.add(at, "is not a JSON Schema the call path can read: %v", err)
		return
	}
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false}); err != nil {
		v.add(at, "does not resolve: %v", err)
	}
	v.schemaTypes(schema, at)
}

// Keywords whose value is a schema, a list of schemas, or a map of names
// to schemas. Other keywords' values (enum, const, default, examples) are
// data, whatever their shape, and so are the names under properties.
var (
	oneSchema  = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	listSchema = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"}
	mapSchema  = []string{"$defs", "definitions", "dependentSchemas", "dependencies", "patternProperties", "properties"}
)

// schemaTypes reports each type in schema, and in the schemas under it,
// that JSON Schema does not have.
func (v *validator) schemaTypes(schema map[string]any, at string) {
	if schema == nil {
		return
	}
	var types []any
	switch t := schema["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	for _, t := range types {
		if name, _ := t.(string); !slices.Contains(jsonTypes, name) {
			v.add(at+".type", "%q is not a JSON Schema type (want one of %v)", t, jsonTypes)
		}
	}
	for _, k := range oneSchema {
		if sub, ok := schema[k].(map[string]any); ok {
			v.schemaTypes(sub, at+"."+k)
		}
	}
	for _, k := range listSchema {
		list, _ := schema[k].([]any)
		for i, item := range list {
			if sub, ok := item.(map[string]any); ok {
				v.schemaTypes(sub, at+"."+k+"["+strconv.Itoa(i)+"]")
			}
		}
	}
	for _, k := range mapSchema {
		m, _ := schema[k].(map[string]any)
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if sub, ok := m[name].(map[string]any); ok {
				v.schemaTypes(sub, at+"."+k+"."+name)
			}
		}
	}
}
