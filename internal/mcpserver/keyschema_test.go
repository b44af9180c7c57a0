package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/quiverhq/quiver/connectors"
)

// TestKeyArgumentFitsTheSchema: a non-retryable action's listed input
// schema requires the key argument, so every schema of the tool's that
// limits which members an object may have (propertyNames, maxProperties,
// additionalProperties in a subschema that applies to the whole object)
// must let the key by, or a client that checks arguments against the
// listing (as JSON Schema allows it to) can never call the action: the
// listing would require a member it forbids. Arguments the tool's own
// schema takes, plus the key, satisfy the listed schema; what it refuses
// stays refused.
func TestKeyArgumentFitsTheSchema(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		good, bad    string // arguments without the key
	}{
		{"plain", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x"}`, `{"b":1}`},
		{"propertyNames", `{"type":"object","propertyNames":{"enum":["a","b"]}}`, `{"a":1}`, `{"c":1}`},
		{"propertyNames pattern", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, `{"ab":1}`, `{"a1":1}`},
		{"maxProperties", `{"type":"object","maxProperties":1}`, `{"a":1}`, `{"a":1,"b":2}`},
		{"minProperties", `{"type":"object","minProperties":1}`, `{"a":1}`, `{}`},
		{"allOf closed", `{"type":"object","allOf":[{"properties":{"a":{}},"additionalProperties":false}]}`, `{"a":1}`, `{"b":1}`},
		{"anyOf closed", `{"type":"object","anyOf":[{"properties":{"a":{}},"required":["a"],"additionalProperties":false},{"properties":{"b":{}},"required":["b"],"additionalProperties":false}]}`, `{"b":1}`, `{"a":1,"b":1}`},
		{"oneOf, nested", `{"type":"object","oneOf":[{"allOf":[{"properties":{"a":{"type":"integer"}},"additionalProperties":false}]}]}`, `{"a":1}`, `{"a":"x"}`},
		{"if then else", `{"type":"object","if":{"required":["a"]},"then":{"maxProperties":1},"else":{"propertyNames":{"const":"b"}}}`, `{"b":1}`, `{"c":1}`},
		{"not", `{"type":"object","not":{"maxProperties":0}}`, `{"a":1}`, `{}`},
		{"dependentSchemas", `{"type":"object","dependentSchemas":{"a":{"propertyNames":{"enum":["a","b"]}}}}`, `{"a":1,"b":2}`, `{"a":1,"c":2}`},
	} {
		a := connectors.Action{Name: "act", InputSchema: json.RawMessage(c.schema)}
		tool, key, err := mcpTool("t__act", &a)
		if err != nil || key != keyArg {
			t.Fatalf("%s: %v %q", c.name, err, key)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %s: %v", c.name, b, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %s: %v", c.name, b, err)
		}
		withKey := func(args string) map[string]any {
			var m map[string]any
			_ = json.Unmarshal([]byte(args), &m)
			m[keyArg] = "k-1"
			return m
		}
		if err := rs.Validate(withKey(c.good)); err != nil {
			t.Errorf("%s: %s refuses good arguments with the key: %v", c.name, b, err)
		}
		if err := rs.Validate(withKey(c.bad)); err == nil {
			t.Errorf("%s: %s takes bad arguments", c.name, b)
		}
		var orig jsonschema.Schema
		_ = json.Unmarshal([]byte(c.schema), &orig)
		ro, _ := orig.Resolve(nil)
		if ro.Validate(withoutKey(withKey(c.good))) != nil || ro.Validate(withoutKey(withKey(c.bad))) == nil {
			t.Errorf("%s: the case is wrong", c.name)
		}
	}
}

func withoutKey(m map[string]any) map[string]any {
	delete(m, keyArg)
	return m
}
