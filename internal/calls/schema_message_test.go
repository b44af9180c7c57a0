package calls

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestBoundMessages: a number out of a bound is said in decimals. The
// validator wrote the value as a fraction and the bound with %f
// ("maximum: 21/1 is greater than 20.000000").
func TestBoundMessages(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{
		"n":{"type":"integer","maximum":20},
		"f":{"type":"number","minimum":1.5},
		"x":{"type":"number","exclusiveMaximum":3}}}`), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"n":21}`:    "maximum: 21 is greater than 20",
		`{"f":0.25}`:  "minimum: 0.25 is less than 1.5",
		`{"x":3}`:     "exclusiveMaximum: 3 is greater than or equal to 3",
		`{"f":1e-20}`: "minimum: 1e-20 is less than 1.5",
	} {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		verr := r.Validate(v)
		if verr == nil {
			t.Fatalf("%s: valid", in)
		}
		if got := trimMessage(verr.Error()); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to say %q", in, got, want)
		}
	}
}
