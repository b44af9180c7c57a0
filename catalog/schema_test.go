package catalog_test

import (
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

// withSchema returns validBuiltin with its action's input schema replaced.
func withSchema(schema string) string {
	i := strings.Index(validBuiltin, "    input_schema:\n")
	return validBuiltin[:i] + "    input_schema:\n" + schema
}

// TestCheckResolvesSchemas: an input schema that the call path's validator
// cannot use is not enforced at run time (the arguments go to the tool
// unchecked), so `quiver catalog check` refuses it, deep as well as at the
// top: a pattern that does not compile, a $ref to nothing, a keyword of
// the wrong kind, a type JSON Schema does not have.
func TestCheckResolvesSchemas(t *testing.T) {
	for name, tc := range map[string]struct{ schema, want string }{
		"pattern does not compile": {"      type: object\n      properties: {q: {type: string, pattern: \"((\"}}\n", "actions[0].input_schema: "},
		"ref to nothing":           {"      type: object\n      properties: {q: {$ref: \"#/$defs/nope\"}}\n", "actions[0].input_schema: "},
		"minimum not a number":     {"      type: object\n      properties: {q: {type: integer, minimum: one}}\n", "actions[0].input_schema: "},
		"unknown type":             {"      type: object\n      properties: {q: {type: strng}}\n", "actions[0].input_schema.properties.q.type: \"strng\" is not a JSON Schema type"},
		"unknown type in a list":   {"      type: object\n      properties: {q: {type: [string, nul]}}\n", "actions[0].input_schema.properties.q.type: \"nul\" is not a JSON Schema type"},
		"unknown type in items":    {"      type: object\n      properties: {q: {type: array, items: {type: text}}}\n", "actions[0].input_schema.properties.q.items.type: \"text\""},
		"unknown type in anyOf":    {"      type: object\n      properties: {q: {anyOf: [{type: string}, {type: int}]}}\n", "actions[0].input_schema.properties.q.anyOf[1].type: \"int\""},
	} {
		t.Run(name, func(t *testing.T) {
			problems := catalog.Check(mapFS(map[string]string{"demo.yaml": withSchema(tc.schema)}))
			if len(problems) == 0 || !strings.Contains(problems.Error(), "demo.yaml: "+tc.want) {
				t.Fatalf("problems %v, want one at %q", problems, tc.want)
			}
		})
	}
	// What is data, not schema, is not read as schema: a property named
	// "type", and enum, const and default values shaped like schemas.
	ok := "      type: object\n      properties:\n        type: {type: string, enum: [a, b]}\n" +
		"        q: {type: object, enum: [{type: nope}], const: {type: nope}, default: {type: nope}}\n"
	if problems := catalog.Check(mapFS(map[string]string{"demo.yaml": withSchema(ok)})); len(problems) > 0 {
		t.Fatalf("a valid schema was refused: %v", problems)
	}
}
