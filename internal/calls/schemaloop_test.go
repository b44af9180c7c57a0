package calls

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

func TestInPlaceLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		loops  bool
	}{
		{"root refers to itself", `{"$ref":"#"}`, true},
		{"a definition refers to itself", `{"$ref":"#/$defs/X","$defs":{"X":{"$ref":"#/$defs/X"}}}`, true},
		{"two definitions refer to each other", `{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"allOf":[{"$ref":"#/$defs/A"}]}}}`, true},
		{"allOf back to the root", `{"type":"object","allOf":[{"$ref":"#"}]}`, true},
		{"not, then, dependentSchemas", `{"not":{"if":{},"then":{"dependentSchemas":{"x":{"$ref":"#/not"}}}}}`, true},
		{"by anchor", `{"$defs":{"A":{"$anchor":"a","anyOf":[{"$ref":"#a"}]}}}`, true},
		{"by $id", `{"$id":"https://example.com/s","$defs":{"A":{"$id":"a.json","$ref":"a.json"}}}`, true},
		{"escaped pointer", `{"$defs":{"a/b~c":{"$ref":"#/$defs/a~1b~0c"}}}`, true},
		{"percent-escaped pointer", `{"$defs":{"a b":{"$ref":"#/$defs/a%20b"}}}`, true},
		{"a tree through properties ends", `{"$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"$ref":"#/$defs/Node"}`, false},
		{"the root under a property ends", `{"type":"object","properties":{"child":{"$ref":"#"}}}`, false},
		{"a chain of references ends", `{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/B"},"B":{"type":"object"}}}`, false},
		{"another document is not followed", `{"$ref":"https://example.com/other.json"}`, false},
		{"a missing definition", `{"$ref":"#/$defs/none"}`, false},
		{"a plain schema", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, false},
	} {
		var doc any
		if err := json.Unmarshal([]byte(tc.schema), &doc); err != nil {
			t.Fatal(err)
		}
		if got := inPlaceLoop(doc); got != tc.loops {
			t.Errorf("%s: inPlaceLoop = %v, want %v", tc.name, got, tc.loops)
		}
	}
}

// A schema that would have the validator recurse forever is not enforced:
// before, checking arguments against it overflowed the stack, which killed
// the process (a tool's server chooses its schemas).
func TestCheckArgumentsSkipsALoopingSchema(t *testing.T) {
	e := New(Options{})
	a := &connectors.Action{Name: "loop", InputSchema: json.RawMessage(`{"$ref":"#/$defs/X","$defs":{"X":{"$ref":"#/$defs/X"}}}`)}
	if err := e.checkArguments(context.Background(), a, json.RawMessage(`{"q":1}`)); err != nil {
		t.Fatalf("err = %v, want the arguments passed on unchecked", err)
	}
	// A recursive schema that ends is still enforced.
	tree := &connectors.Action{Name: "tree", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}},"required":["name"]}`)}
	err := e.checkArguments(context.Background(), tree, json.RawMessage(`{"name":"a","child":{"child":{"name":"c"}}}`))
	if p, ok := problem.As(err); !ok || p.Code != problem.InvalidArguments {
		t.Fatalf("a nested value missing its name: %v, want invalid_arguments", err)
	}
}
