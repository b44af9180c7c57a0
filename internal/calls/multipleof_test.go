package calls

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// TestMultipleOfDecimal: a decimal multipleOf does not refuse its exact
// multiples, which floating-point division took for remainders (1.15 /
// 0.01); a whole one still refuses what is not a multiple, and a property
// or a const named multipleOf is not taken for the keyword.
func TestMultipleOfDecimal(t *testing.T) {
	e := New(Options{})
	a := &connectors.Action{Name: "pay", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"amount":{"type":"number","multipleOf":0.01},
		"rate":{"anyOf":[{"type":"number","multipleOf":0.1}]},
		"count":{"type":"integer","multipleOf":5},
		"multipleOf":{"type":"object","properties":{"multipleOf":{"type":"number","multipleOf":3}}},
		"fixed":{"const":{"multipleOf":0.5}},
		"nested":{"type":"object","properties":{"price":{"type":"number","multipleOf":0.001}}}}}`)}
	for _, args := range []string{`{"amount":1.15}`, `{"amount":0.07}`, `{"rate":0.3}`, `{"count":10}`,
		`{"multipleOf":{"multipleOf":9}}`, `{"fixed":{"multipleOf":0.5}}`, `{"nested":{"price":0.007}}`, `{"amount":1e-2}`} {
		if err := e.checkArguments(context.Background(), a, json.RawMessage(args)); err != nil {
			t.Errorf("%s: %v, want it taken", args, err)
		}
	}
	for args, want := range map[string]map[string]string{
		`{"count":7}`:                     {"count": "must be a multiple of 5"},
		`{"multipleOf":{"multipleOf":4}}`: {"multipleOf": "multipleOf.multipleOf must be a multiple of 3"},
		`{"fixed":{"multipleOf":0.25}}`:   nil,
		`{"amount":1.155}`:                {"amount": "must be a multiple of 0.01"},
		`{"nested":{"price":0.3335}}`:     {"nested": "nested.price must be a multiple of 0.001"},
	} {
		err := e.checkArguments(context.Background(), a, json.RawMessage(args))
		p, ok := problem.As(err)
		if !ok || p.Code != problem.InvalidArguments {
			t.Errorf("%s: %v, want invalid_arguments", args, err)
			continue
		}
		for k, w := range want {
			if p.Fields[k] != w {
				t.Errorf("%s: fields.%s = %q, want %q", args, k, p.Fields[k], w)
			}
		}
	}
}
