package calls

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// TestCheckArgumentsNull: a null where the schema wants another type is
// named as null in the field's message.
func TestCheckArgumentsNull(t *testing.T) {
	e := New(Options{})
	a := &connectors.Action{Name: "get", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"object"}}}`)}
	err := e.checkArguments(context.Background(), a, json.RawMessage(`{"query":null}`))
	p, ok := problem.As(err)
	if !ok || p.Code != problem.InvalidArguments {
		t.Fatalf("err = %v, want invalid_arguments", err)
	}
	msg := p.Fields["query"]
	if msg == "" || strings.Contains(msg, "reflect") || !strings.Contains(msg, "null") {
		t.Errorf("query: %q", msg)
	}
}

// TestSchemaForCompiledOnce: a schema is compiled on its first call, and
// every later call with the same text, even in another slice, gets the same
// one without allocating (no copy of the schema's text as a key).
func TestSchemaForCompiledOnce(t *testing.T) {
	e := New(Options{})
	raw := `{"type":"object","properties":{"q":{"type":"string"}}}`
	first := e.schemaFor(context.Background(), json.RawMessage(raw))
	again := json.RawMessage(raw)
	if e.schemaFor(context.Background(), again) != first {
		t.Fatal("compiled twice")
	}
	if n := testing.AllocsPerRun(100, func() { e.schemaFor(context.Background(), again) }); n != 0 {
		t.Errorf("a compiled schema's lookup allocates %v times", n)
	}
}
