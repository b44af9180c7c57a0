package calls

import (
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
	err := e.checkArguments(a, json.RawMessage(`{"query":null}`))
	p, ok := problem.As(err)
	if !ok || p.Code != problem.InvalidArguments {
		t.Fatalf("err = %v, want invalid_arguments", err)
	}
	msg := p.Fields["query"]
	if msg == "" || strings.Contains(msg, "reflect") || !strings.Contains(msg, "null") {
		t.Errorf("query: %q", msg)
	}
}
