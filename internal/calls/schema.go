package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	doc      any // the schema as JSON, numbers as written, for explain
	err      error
	// inexact: multipleOf keywords the validator cannot judge were taken
	// out of resolved (inexactMultipleOf), to be checked by exactMultiples.
	inexact bool
}

func (e *Engine) schemaFor(ctx context.Context, raw json.RawMessage) *compiledSchema {
	e.schemasMu.RLock()
	cs := e.schemas[string(raw)]
	e.schemasMu.RUnlock()
	if cs != nil {
		return cs
	}
	cs = &compiledSchema{}
	var s jsonschema.Schema
	var doc any
	forValidator := inexactMultipleOf(raw)
	cs.inexact = string(forValidator) != string(raw)
	if err := json.Unmarshal(forValidator, &s); err != nil {
		cs.err = err
	} else if err := json.Unmarshal(raw, &doc); err != nil || inPlaceLoop(doc) {
		cs.err = errSchemaLoops
		e.opts.Logger.WarnContext(ctx, "an action's input schema applies itself to the same value endlessly; it is not enforced", "schema_bytes", len(raw))
	} else {
		cs.schema, cs.doc = &s, decodeNumbers(raw)
		cs.resolved, cs.err = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	}
	e.schemasMu.Lock()
	defer e.schemasMu.Unlock()
	if prev := e.schemas[string(raw)]; prev != nil {
		return prev // compiled meanwhile by another call
	}
	if e.schemas == nil {
		e.schemas = map[string]*compiledSchema{}
	}
	e.schemas[string(raw)] = cs
	return cs
}

// errSchemaLoops marks a schema inPlaceLoop refused: validating with it
// would never end.
var errSchemaLoops = errors.New("calls: the schema applies itself to the same value endlessly")

// checkArguments validates arguments against the action's input schema.
// A schema the validator cannot use (a tool's own mistake) is not enforced:
// the tool will judge its arguments itself.
func (e *Engine) checkArguments(ctx context.Context, a *connectors.Action, args json.RawMessage) error {
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
	cs := e.schemaFor(ctx, a.InputSchema)
	if cs.err != nil {
		return nil
	}
	if err := cs.resolved.Validate(obj); err != nil {
		return &problem.Error{Code: problem.InvalidArguments, Message: fmt.Sprintf("The arguments do not match the input schema of %q.", a.Name),
			Fields: fieldErrors(cs.schema, cs.doc, obj, err)}
	}
	if cs.inexact {
		if bad := exactMultiples(cs.doc, args); bad != nil {
			return &problem.Error{Code: problem.InvalidArguments, Message: fmt.Sprintf("The arguments do not match the input schema of %q.", a.Name),
				Fields: bad}
		}
	}
	return nil
}

// fieldErrors names the bad fields as well as the top level of the schema
// allows, each with a sentence (explain); failing that, the arguments as a
// whole.
func fieldErrors(s *jsonschema.Schema, doc any, obj map[string]any, verr error) map[string]string {
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
	props, _ := nodeAt(doc, []string{"properties"}).(map[string]any)
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
				where, phrase := explain(props[k], obj[k], err)
				out[k] = subject(k, where, phrase)
			}
		}
	}
	if len(out) == 0 {
		where, phrase := explain(doc, obj, verr)
		out["arguments"] = phrase
		if where != "" {
			out["arguments"] = where + " " + phrase
		}
	}
	return out
}

// subject writes a property's message: the phrase alone when the property
// itself is wrong, else with the place inside it that is.
func subject(name, where, phrase string) string {
	if where == "" {
		return phrase
	}
	var b strings.Builder
	appendName(&b, name)
	if !strings.HasPrefix(where, "[") {
		b.WriteByte('.')
	}
	b.WriteString(where)
	return b.String() + " " + phrase
}

// decodeNumbers decodes JSON keeping each number as written.
func decodeNumbers(raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return v
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
