package calls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
)

// compiledSchema is an action's input schema, resolved once.
type compiledSchema struct {
	resolved *jsonschema.Resolved
	schema   *jsonschema.Schema
	err      error
}

func (e *Engine) schemaFor(raw json.RawMessage) *compiledSchema {
	key := string(raw)
	if v, ok := e.schemas.Load(key); ok {
		return v.(*compiledSchema)
	}
	cs := &compiledSchema{}
	var s jsonschema.Schema
	var doc any
	if err := json.Unmarshal(raw, &s); err != nil {
		cs.err = err
	} else if err := json.Unmarshal(raw, &doc); err != nil || inPlaceLoop(doc) {
		cs.err = errSchemaLoops
		e.opts.Logger.Warn("an action's input schema applies itself to the same value endlessly; it is not enforced", "schema_bytes", len(raw))
	} else {
		cs.schema = &s
		cs.resolved, cs.err = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	}
	e.schemas.Store(key, cs)
	return cs
}

// errSchemaLoops marks a schema inPlaceLoop refused: validating with it
// would never end.
var errSchemaLoops = errors.New("calls: the schema applies itself to the same value endlessly")

// checkArguments validates arguments against the action's input schema.
// A schema the validator cannot use (a tool's own mistake) is not enforced:
// the tool will judge its arguments itself.
func (e *Engine) checkArguments(a *connectors.Action, args json.RawMessage) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	inst, err := decodeForValidation(args)
	if err != nil {
		return problem.Validation("The arguments are not valid JSON.", map[string]string{"arguments": err.Error()})
	}
	obj, ok := inst.(map[string]any)
	if !ok {
		return &problem.Error{Code: problem.InvalidArguments, Message: "The arguments must be a JSON object.",
			Fields: map[string]string{"arguments": "must be an object"}}
	}
	if len(a.InputSchema) == 0 {
		return nil
	}
	cs := e.schemaFor(a.InputSchema)
	if cs.err != nil {
		return nil
	}
	if err := cs.resolved.Validate(obj); err != nil {
		return &problem.Error{Code: problem.InvalidArguments, Message: fmt.Sprintf("The arguments do not match the input schema of %q.", a.Name),
			Fields: fieldErrors(cs.schema, obj, err)}
	}
	return nil
}

// fieldErrors names the bad fields as well as the top level of the schema
// allows, falling back to the validator's message.
func fieldErrors(s *jsonschema.Schema, obj map[string]any, verr error) map[string]string {
	out := map[string]string{}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			out[name] = "is required"
		}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ps, ok := s.Properties[k]
		if !ok || ps == nil {
			if s.AdditionalProperties != nil && isFalse(s.AdditionalProperties) {
				out[k] = "is not an accepted argument"
			}
			continue
		}
		if refersAway(ps) {
			continue // its references mean something only within the whole schema
		}
		if r, err := ps.Resolve(nil); err == nil {
			if err := r.Validate(obj[k]); err != nil {
				out[k] = trimMessage(err.Error())
			}
		}
	}
	if len(out) == 0 {
		out["arguments"] = trimMessage(verr.Error())
	}
	return out
}

// decodeForValidation decodes JSON for the schema validator. Numbers are
// read by their text and handed over as float64 even when they overflow it
// (1e400 becomes +Inf): only the check sees them, the tool gets the bytes.
func decodeForValidation(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbersToFloat(v), nil
}

func numbersToFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return float64(i)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToFloat(e)
		}
	}
	return v
}

// refersAway reports whether a subschema holds a reference. Taken alone,
// as fieldErrors takes a property's schema, "#" would name the subschema
// itself: {"$ref": "#"} for a property, which recurses through properties
// in the whole schema, would apply itself to the same value forever.
func refersAway(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err != nil || bytes.Contains(b, []byte(`"$ref"`)) || bytes.Contains(b, []byte(`"$dynamicRef"`))
}

func isFalse(s *jsonschema.Schema) bool {
	b, _ := json.Marshal(s)
	return string(b) == "false" || string(b) == `{"not":{}}`
}

func trimMessage(m string) string {
	m = strings.TrimPrefix(m, "validating root: ")
	// The validator prints a JSON null as the zero reflect.Value.
	m = strings.ReplaceAll(m, "<invalid reflect.Value>", "null")
	// And a bound's value as a fraction, its limit with %f:
	// "maximum: 21/1 is greater than 20.000000" says "21 … 20".
	m = boundRE.ReplaceAllStringFunc(m, func(b string) string {
		g := boundRE.FindStringSubmatch(b)
		value, ok := new(big.Rat).SetString(g[2])
		if !ok {
			return b
		}
		return g[1] + ": " + decimal(value) + " is " + g[3] + " " + strings.TrimSuffix(strings.TrimRight(g[4], "0"), ".")
	})
	if len(m) > 300 {
		m = m[:300] + "…"
	}
	return m
}

// boundRE is the validator's message for a number out of a bound.
var boundRE = regexp.MustCompile(`(maximum|minimum|exclusiveMaximum|exclusiveMinimum): (-?\d+/\d+) is ((?:greater|less) than(?: or equal to)?) (-?\d+\.\d+)`)

// decimal writes r as a decimal: exactly when it has one of at most 40
// places, else as the nearest float64.
func decimal(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	if places, exact := r.FloatPrec(); exact && places <= 40 {
		return r.FloatString(places)
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
