package calls

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// msgSchema has a rule of each kind the validator checks.
const msgSchema = `{"type":"object","properties":{
	"s":{"type":"string"},
	"multi":{"type":["string","number","boolean","array"],"items":{"type":["string","number","boolean"]}},
	"n":{"type":"integer","maximum":20},
	"f":{"type":"number","minimum":1.5},
	"x":{"type":"number","exclusiveMaximum":3},
	"y":{"type":"number","exclusiveMinimum":0},
	"m":{"type":"number","multipleOf":0.5},
	"e":{"type":"string","enum":["basic","advanced"]},
	"e1":{"enum":["only"]},
	"eodd":{"enum":["a b", 1, null]},
	"c":{"const":{"k":1}},
	"short":{"type":"string","minLength":1},
	"long":{"type":"string","maxLength":2},
	"pat":{"type":"string","pattern":"^a+$"},
	"list":{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true,"items":{"type":"string"}},
	"tuple":{"type":"array","prefixItems":[{"type":"integer"}]},
	"has":{"type":"array","contains":{"const":1}},
	"map":{"type":"object","additionalProperties":{"type":"string"}},
	"obj":{"type":"object","properties":{"inner":{"type":"boolean"},"odd key":{"type":"string"}},"required":["inner"],"additionalProperties":false},
	"slashed":{"type":"object","properties":{"a/b":{"type":"string"},"c~d":{"type":"string"}}},
	"props":{"type":"object","minProperties":1},
	"dep":{"type":"object","dependentRequired":{"a":["b"]}},
	"any":{"anyOf":[{"type":"string"},{"type":"integer"}]},
	"one":{"oneOf":[{"type":"number"},{"type":"integer"}]},
	"not":{"not":{"type":"string"}}
},"required":["s"]}`

// TestArgumentSentences: each rule the validator checks is said as a
// sentence for a person, naming where inside the argument it failed.
func TestArgumentSentences(t *testing.T) {
	e := New(Options{})
	a := &connectors.Action{Name: "act", InputSchema: json.RawMessage(msgSchema)}
	for args, want := range map[string]map[string]string{
		`{"s":5}`:                                   {"s": "must be a string, not a number"},
		`{"s":null}`:                                {"s": "must be a string, not null"},
		`{}`:                                        {"s": "is required"},
		`{"s":"","multi":{}}`:                       {"multi": "must be a string, number, boolean or array, not an object"},
		`{"s":"","multi":[1,[2]]}`:                  {"multi": "multi[1] must be a string, number or boolean, not an array"},
		`{"s":"","n":21}`:                           {"n": "must be at most 20"},
		`{"s":"","n":2.5}`:                          {"n": "must be an integer, not a fraction"},
		`{"s":"","n":1e400}`:                        {"n": "must be a finite number"},
		`{"s":"","f":-1e400}`:                       {"f": "must be at least 1.5"},
		`{"s":"","f":0.25}`:                         {"f": "must be at least 1.5"},
		`{"s":"","x":3}`:                            {"x": "must be less than 3"},
		`{"s":"","y":0}`:                            {"y": "must be greater than 0"},
		`{"s":"","m":0.3}`:                          {"m": "must be a multiple of 0.5"},
		`{"s":"","e":"ultra"}`:                      {"e": "must be one of basic, advanced"},
		`{"s":"","e1":"x"}`:                         {"e1": "must be only"},
		`{"s":"","eodd":2}`:                         {"eodd": `must be one of "a b", 1, null`},
		`{"s":"","c":{}}`:                           {"c": `must be {"k":1}`},
		`{"s":"","short":""}`:                       {"short": "must be at least 1 character long"},
		`{"s":"","long":"abc"}`:                     {"long": "must be at most 2 characters long"},
		`{"s":"","pat":"b"}`:                        {"pat": "must match the pattern ^a+$"},
		`{"s":"","list":[]}`:                        {"list": "must have at least 1 item"},
		`{"s":"","list":["a","b","c"]}`:             {"list": "must have at most 2 items"},
		`{"s":"","list":["a","a"]}`:                 {"list": "must not hold the same item twice"},
		`{"s":"","list":["a",{}]}`:                  {"list": "list[1] must be a string, not an object"},
		`{"s":"","tuple":["x"]}`:                    {"tuple": "tuple[0] must be an integer, not a string"},
		`{"s":"","has":[2]}`:                        {"has": "must hold an item that matches its schema"},
		`{"s":"","map":{"a":"x","b":{}}}`:           {"map": "map.b must be a string, not an object"},
		`{"s":"","obj":{"inner":1}}`:                {"obj": "obj.inner must be a boolean, not a number"},
		`{"s":"","obj":{"inner":true,"odd key":1}}`: {"obj": `obj."odd key" must be a string, not a number`},
		`{"s":"","obj":{}}`:                         {"obj": "is missing the property inner"},
		`{"s":"","slashed":{"a/b":1}}`:              {"slashed": `slashed."a/b" must be a string, not a number`},
		`{"s":"","slashed":{"c~d":1}}`:              {"slashed": `slashed."c~d" must be a string, not a number`},
		`{"s":"","obj":{"inner":true,"z":1}}`:       {"obj": "does not accept the property z"},
		`{"s":"","props":{}}`:                       {"props": "must have at least 1 property"},
		`{"s":"","dep":{"a":1}}`:                    {"dep": "must have the property b when it has a"},
		`{"s":"","any":true}`:                       {"any": "does not match any of the forms its schema allows"},
		`{"s":"","one":1}`:                          {"one": "matches more than one of the forms its schema allows, and must match exactly one"},
		`{"s":"","not":"x"}`:                        {"not": "is a value its schema rules out"},
	} {
		err := e.checkArguments(context.Background(), a, json.RawMessage(args))
		p, ok := problem.As(err)
		if !ok || p.Code != problem.InvalidArguments {
			t.Errorf("%s: %v, want invalid_arguments", args, err)
			continue
		}
		if len(p.Fields) != len(want) {
			t.Errorf("%s: fields %v, want %v", args, p.Fields, want)
		}
		for k, w := range want {
			if p.Fields[k] != w {
				t.Errorf("%s: fields.%s = %q, want %q", args, k, p.Fields[k], w)
			}
		}
	}
}

// TestArgumentSentenceFallback: whatever the validator says, the sentence
// shows none of Go's formatting.
func TestArgumentSentenceFallback(t *testing.T) {
	doc := decodeNumbers(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	for _, verr := range []error{
		errors.New("validating root: frobnicate: map[] has +Inf in [a b]"),
		errors.New("cannot validate against a struct; see https://github.com/google/jsonschema-go/issues/23"),
		errors.New("validating https://example.com/s.json: type: map[] has type \"object\", want \"string\""),
		errors.New("validating /properties/nope/items: type: map[] has type \"object\", want \"string\""),
		errors.New("validating root: enum: map[] does not equal any of: [x y]"),
		errors.New("validating root: minimum: +Inf is less than 1.000000"),
	} {
		where, phrase := explain(doc, map[string]any{"a": map[string]any{}}, verr)
		msg := where + " " + phrase
		for _, leak := range []string{"map[", "Inf", "[a b]", "[x y]", "validating", "struct", "github.com", "%!", "000000"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%v: %q shows %q", verr, msg, leak)
			}
		}
		if phrase == "" {
			t.Errorf("%v: no sentence", verr)
		}
	}
}
