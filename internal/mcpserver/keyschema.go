package mcpserver

// Making room for the key argument in a tool's own input schema.
//
// A non-retryable action's listed schema requires the key argument
// (mcpTool), which the engine takes out before it checks the arguments
// against the tool's schema. A listed schema that forbade that member
// would require what it forbids, and a client that checks arguments
// against the listing before it calls (JSON Schema lets it) could never
// call the action. fitKey makes each keyword that limits an object's
// members judge the object as the tool does, without the key:
//
//	propertyNames N              → {"anyOf": [{"const": key}, N]}
//	maxProperties, minProperties → one more (the key is always there)
//	additionalProperties,        → the key among properties, as {}, where
//	unevaluatedProperties          it is not (so it is never "additional")
//
// in the schema and in every subschema that applies to the same object
// (allOf, anyOf, oneOf, not, if, then, else, dependentSchemas). A $ref is
// not followed, and patternProperties that match the key are left as they
// are: neither has a plain way to leave one member out.

// fitKey mends schema, an input schema or a subschema applying to the
// whole arguments object, for the key argument key; top is set for the
// input schema itself, whose properties hold the key's own schema.
func fitKey(schema map[string]any, key string, top bool) {
	if n, ok := schema["propertyNames"]; ok {
		schema["propertyNames"] = map[string]any{"anyOf": []any{map[string]any{"const": key}, n}}
	}
	for _, kw := range []string{"maxProperties", "minProperties"} {
		if n, ok := schema[kw].(float64); ok {
			schema[kw] = n + 1
		}
	}
	if !top && (limits(schema["additionalProperties"]) || limits(schema["unevaluatedProperties"])) {
		props, ok := schema["properties"].(map[string]any)
		if !ok {
			props = map[string]any{}
			schema["properties"] = props
		}
		if _, has := props[key]; !has {
			props[key] = map[string]any{}
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := schema[kw].([]any)
		for _, sub := range list {
			if m, ok := sub.(map[string]any); ok {
				fitKey(m, key, false)
			}
		}
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if m, ok := schema[kw].(map[string]any); ok {
			fitKey(m, key, false)
		}
	}
	if deps, ok := schema["dependentSchemas"].(map[string]any); ok {
		for _, sub := range deps {
			if m, ok := sub.(map[string]any); ok {
				fitKey(m, key, false)
			}
		}
	}
}

// limits reports whether an additionalProperties or unevaluatedProperties
// value may refuse a member: it is there and is not true or {}.
func limits(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return !v
	case map[string]any:
		return len(v) > 0
	}
	return true
}
