// Package catalog owns the list of tools Quiver offers: one YAML file per
// tool, embedded in the binary, loaded and validated at start. It describes
// each tool (how it is reached, what configuration steps it needs, which
// actions it has) and nothing else: it must never know about HTTP, storage,
// accounts or secrets values, and it must never reach the network.
package catalog

import (
	"embed"
	"encoding/json"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed *.yaml
var files embed.FS

// Catalog is a loaded, validated set of entries. It is read-only once built
// and safe for concurrent use.
type Catalog struct {
	byName map[string]*Entry
	sorted []*Entry
}

// Embedded returns the catalog files compiled into the binary, for Check.
func Embedded() fs.FS { return files }

// Load parses and validates the catalog compiled into the binary.
func Load() (*Catalog, error) { return Parse(files) }

// Parse reads every *.yaml file at the root of fsys, validates them and
// returns the catalog. On any problem it returns a Problems error listing all
// of them, each naming its file and field.
func Parse(fsys fs.FS) (*Catalog, error) {
	entries, problems := parseAll(fsys)
	if len(problems) > 0 {
		return nil, problems
	}
	c := &Catalog{byName: make(map[string]*Entry, len(entries))}
	for _, fe := range entries {
		c.byName[fe.entry.Name] = fe.entry
		c.sorted = append(c.sorted, fe.entry)
	}
	sort.Slice(c.sorted, func(i, j int) bool { return c.sorted[i].Name < c.sorted[j].Name })
	return c, nil
}

// Check validates the catalog files in fsys and returns every problem found;
// none means the catalog loads. It backs `quiver catalog check`.
func Check(fsys fs.FS) Problems {
	_, problems := parseAll(fsys)
	return problems
}

// Get returns the entry named name.
func (c *Catalog) Get(name string) (*Entry, bool) {
	e, ok := c.byName[name]
	return e, ok
}

// List returns the entries in category, sorted by name; an empty category
// means every entry. The slice is new; the entries are shared and must not
// be modified.
func (c *Catalog) List(category string) []*Entry {
	out := make([]*Entry, 0, len(c.sorted))
	for _, e := range c.sorted {
		if category == "" || slices.Contains(e.Categories, category) {
			out = append(out, e)
		}
	}
	return out
}

// Action returns the fixed action named name.
func (e *Entry) Action(name string) (*Action, bool) {
	for i := range e.Actions {
		if e.Actions[i].Name == name {
			return &e.Actions[i], true
		}
	}
	return nil, false
}

// Step returns the configuration step at index i, counted from 0 (the API
// shows it as i+1 of len(Steps)).
func (e *Entry) Step(i int) (*Step, bool) {
	if i < 0 || i >= len(e.Steps) {
		return nil, false
	}
	return &e.Steps[i], true
}

// StepByID returns the configuration step whose ID is id, and its index.
func (e *Entry) StepByID(id string) (*Step, int, bool) {
	for i := range e.Steps {
		if e.Steps[i].ID == id {
			return &e.Steps[i], i, true
		}
	}
	return nil, -1, false
}

// Field returns the field of the step named name.
func (s *Step) Field(name string) (*Field, bool) {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i], true
		}
	}
	return nil, false
}

type fileEntry struct {
	file  string
	entry *Entry
}

// parseAll decodes and validates every file, collecting all problems.
func parseAll(fsys fs.FS) ([]fileEntry, Problems) {
	var problems Problems
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, Problems{{File: ".", Message: err.Error()}}
	}
	if len(names) == 0 {
		return nil, Problems{{File: ".", Message: "no catalog files (*.yaml)"}}
	}
	var entries []fileEntry
	seen := map[string]string{}
	for _, file := range names {
		e, ps := parseFile(fsys, file)
		problems = append(problems, ps...)
		if e == nil {
			continue
		}
		if other, dup := seen[e.Name]; dup && e.Name != "" {
			problems = append(problems, &Problem{File: file, Field: "name",
				Message: "duplicate name " + quote(e.Name) + ", also in " + other})
			continue
		}
		seen[e.Name] = file
		entries = append(entries, fileEntry{file: file, entry: e})
	}
	problems = append(problems, providerConflicts(entries)...)
	return entries, problems
}

// parseFile decodes one file strictly (unknown keys are refused), fills
// derived fields and validates the entry.
func parseFile(fsys fs.FS, file string) (*Entry, Problems) {
	f, err := fsys.Open(file)
	if err != nil {
		return nil, Problems{{File: file, Message: err.Error()}}
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var e Entry
	if err := dec.Decode(&e); err != nil {
		return nil, Problems{{File: file, Message: "invalid YAML: " + err.Error()}}
	}
	v := &validator{file: file}
	if want := strings.TrimSuffix(path.Base(file), ".yaml"); e.Name != "" && e.Name != want {
		v.add("name", "must match the file name (%s.yaml holds %q)", want, e.Name)
	}
	v.entry(&e)
	normalize(&e, v)
	return &e, v.problems
}

// normalize turns nil lists into empty ones (so the JSON shows [] rather than
// null) and each action's SchemaYAML into InputSchema.
func normalize(e *Entry, v *validator) {
	if e.Categories == nil {
		e.Categories = []string{}
	}
	if e.Steps == nil {
		e.Steps = []Step{}
	}
	for i := range e.Steps {
		for j := range e.Steps[i].Fields {
			f := &e.Steps[i].Fields[j]
			if f.Pattern != "" {
				f.re, _ = regexp.Compile(f.Pattern) // validate reported any that does not compile
			}
		}
	}
	for i := range e.Actions {
		a := &e.Actions[i]
		schema := a.SchemaYAML
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		raw, err := json.Marshal(schema)
		if err != nil {
			v.add(field("actions", i, "input_schema"), "cannot be written as JSON: %v", err)
			continue
		}
		v.resolveSchema(raw, a.SchemaYAML, field("actions", i, "input_schema"))
		a.InputSchema = raw
	}
}
