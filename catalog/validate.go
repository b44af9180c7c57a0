package catalog

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a catalog file.
type Problem struct {
	File    string // the file, e.g. "tavily.yaml"
	Field   string // the path of the field, e.g. "steps[0].fields[1].secret"; empty for the whole file
	Message string
}

func (p *Problem) Error() string {
	if p.Field == "" {
		return p.File + ": " + p.Message
	}
	return p.File + ": " + p.Field + ": " + p.Message
}

// Problems is every problem found in a catalog. As an error it lists them
// one a line.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return "catalog: " + strconv.Itoa(len(ps)) + " problem(s):\n" + strings.Join(lines, "\n")
}

// Connector names known to the catalog; each is a package in connectors/.
var knownConnectors = []string{"tavily", "browser", "http-request", "mcp"}

// knownCategories are the groupings a user browses the catalog by
// (?category=). An entry names only these, so that a near miss
// ("developers", "Search") cannot split a category in two and leave the
// entry out of its filter; a new grouping is added here.
var knownCategories = []string{"browser", "communication", "custom", "data", "developer", "monitoring", "productivity", "search"}

var (
	slugRE     = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	idRE       = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	fieldRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	providerRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// secretWords mark a field name as holding a credential.
var secretWords = []string{"key", "token", "secret", "password"}

// validator collects the problems of one file.
type validator struct {
	file     string
	problems Problems
}

func (v *validator) add(field, format string, args ...any) {
	v.problems = append(v.problems, &Problem{File: v.file, Field: field, Message: fmt.Sprintf(format, args...)})
}

func field(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

func quote(s string) string { return strconv.Quote(s) }

func (v *validator) entry(e *Entry) {
	switch {
	case e.Name == "":
		v.add("name", "is required")
	case !slugRE.MatchString(e.Name):
		v.add("name", "%q is not a lowercase slug (a-z, 0-9 and single dashes)", e.Name)
	}
	if strings.TrimSpace(e.Title) == "" {
		v.add("title", "is required")
	}
	if strings.TrimSpace(e.Description) == "" {
		v.add("description", "is required")
	}
	if len(e.Categories) == 0 {
		v.add("categories", "needs at least one category")
	}
	for i, c := range e.Categories {
		switch {
		case !slugRE.MatchString(c):
			v.add(field("categories", i), "%q is not a lowercase slug", c)
		case !slices.Contains(knownCategories, c):
			v.add(field("categories", i), "%q is not one of the catalog's categories (%s); add a new one to knownCategories", c, strings.Join(knownCategories, ", "))
		}
	}
	switch e.Auth {
	case AuthNone, AuthAPIKey, AuthOAuth:
	default:
		v.add("auth", "unknown auth %q (want none, api_key or oauth)", e.Auth)
	}
	if !slices.Contains(knownConnectors, e.Connector) {
		v.add("connector", "unknown connector %q (want one of %s)", e.Connector, strings.Join(knownConnectors, ", "))
	}
	v.kind(e)
	v.steps(e)
	v.oauth(e)
	v.actions(e)
	v.flow(e)
}

// kind checks what depends on the entry's type.
func (v *validator) kind(e *Entry) {
	switch e.Type {
	case TypeBuiltin:
		if e.Connector == "mcp" {
			v.add("connector", "a builtin tool cannot use the mcp connector")
		}
		if len(e.Actions) == 0 {
			v.add("actions", "a builtin tool needs at least one action")
		}
		if e.MCPURL != "" {
			v.add("mcp_url", "only a tool of type mcp has an mcp_url")
		}
	case TypeMCP:
		if e.Connector != "mcp" {
			v.add("connector", "a tool of type mcp uses the mcp connector")
		}
		if e.MCPURL == "" {
			v.add("mcp_url", "is required for a tool of type mcp")
		} else if !isHTTPS(e.MCPURL) {
			v.add("mcp_url", "%q is not an https URL", e.MCPURL)
		}
		if len(e.Actions) > 0 {
			v.add("actions", "an MCP tool discovers its actions at run time; list none")
		}
	case TypeCustomMCP:
		if e.Connector != "mcp" {
			v.add("connector", "a tool of type custom_mcp uses the mcp connector")
		}
		if e.MCPURL != "" {
			v.add("mcp_url", "a custom_mcp tool gets its URL from the user; set none")
		}
		if len(e.Actions) > 0 {
			v.add("actions", "an MCP tool discovers its actions at run time; list none")
		}
	default:
		v.add("type", "unknown type %q (want builtin, mcp or custom_mcp)", e.Type)
	}
}

func (v *validator) steps(e *Entry) {
	ids := map[string]bool{}
	for i := range e.Steps {
		s := &e.Steps[i]
		at := func(rest ...any) string { return field(append([]any{"steps", i}, rest...)...) }
		v.uniqueID(at("id"), "step id", s.ID, ids)
		if strings.TrimSpace(s.Title) == "" {
			v.add(at("title"), "is required")
		}
		if strings.TrimSpace(s.Description) == "" { // the step a tool shows tells the user what to do
			v.add(at("description"), "is required")
		}
		switch s.Type {
		case StepForm:
			if len(s.Fields) == 0 {
				v.add(at("fields"), "a form step needs at least one field")
			}
		case StepOAuth:
			if len(s.Fields) > 0 {
				v.add(at("fields"), "an oauth step has no fields")
			}
			if e.OAuth == nil {
				v.add(at("type"), "an oauth step needs an oauth: provider block")
			}
		default:
			v.add(at("type"), "unknown step type %q (want form or oauth)", s.Type)
		}
		v.fields(e, i)
	}
}

func (v *validator) fields(e *Entry, step int) {
	names := map[string]bool{}
	for j := range e.Steps[step].Fields {
		f := &e.Steps[step].Fields[j]
		at := func(rest ...any) string { return field(append([]any{"steps", step, "fields", j}, rest...)...) }
		switch {
		case f.Name == "":
			v.add(at("name"), "is required")
		case !fieldRE.MatchString(f.Name):
			v.add(at("name"), "%q is not an identifier (letters, digits, _)", f.Name)
		case names[f.Name] || otherStepHasField(e, step, f.Name):
			v.add(at("name"), "duplicate field name %q", f.Name)
		}
		names[f.Name] = true
		if strings.TrimSpace(f.Label) == "" {
			v.add(at("label"), "is required")
		}
		switch f.Type {
		case FieldString, FieldURL, FieldObject, FieldBoolean, FieldInteger:
			if len(f.Options) > 0 {
				v.add(at("options"), "only an enum field has options")
			}
		case FieldEnum:
			if len(f.Options) == 0 {
				v.add(at("options"), "an enum field needs at least one option")
			}
			if f.Default != "" && !slices.Contains(f.Options, f.Default) {
				v.add(at("default"), "%q is not one of the options", f.Default)
			}
		default:
			v.add(at("type"), "unknown field type %q", f.Type)
		}
		if f.Pattern != "" {
			if _, err := regexp.Compile(f.Pattern); err != nil {
				v.add(at("pattern"), "does not compile: %v", err)
			}
		}
		v.condition(&e.Steps[step], f, at)
		v.fieldFlow(f, at)
		if looksSecret(f) && !f.Secret {
			v.add(at("secret"), "field %q looks like a credential and must be marked secret: true", f.Name)
		}
	}
}

// condition checks a field's required_when: it names other enum fields of
// the same step, themselves unconditional, and values among their options.
func (v *validator) condition(s *Step, f *Field, at func(rest ...any) string) {
	if !f.Conditional() {
		return
	}
	if f.Required {
		v.add(at("required"), "a field with required_when is required only when its condition holds; set required: false")
	}
	if f.Default != "" {
		v.add(at("default"), "a field with required_when has no default")
	}
	names := make([]string, 0, len(f.RequiredWhen))
	for name := range f.RequiredWhen {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := at("required_when", name)
		other, ok := s.Field(name)
		switch {
		case name == f.Name:
			v.add(path, "a field cannot depend on itself")
			continue
		case !ok:
			v.add(path, "names %q, which is not a field of this step", name)
			continue
		case other.Type != FieldEnum:
			v.add(path, "names %q, which is not an enum field", name)
			continue
		case other.Conditional():
			v.add(path, "names %q, which has a required_when of its own", name)
		}
		values := f.RequiredWhen[name]
		if len(values) == 0 {
			v.add(path, "needs at least one value")
		}
		for i, val := range values {
			if !slices.Contains(other.Options, val) {
				v.add(field(path, i), "%q is not one of the options of %s", val, name)
			}
		}
	}
}

// otherStepHasField reports whether an earlier step already has a field
// named name: configuration is one flat map, so names are unique per entry.
func otherStepHasField(e *Entry, step int, name string) bool {
	for i := 0; i < step; i++ {
		if _, ok := e.Steps[i].Field(name); ok {
			return true
		}
	}
	return false
}

func looksSecret(f *Field) bool {
	name := strings.ToLower(f.Name)
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return f.Type == FieldObject && name == "headers"
}

func (v *validator) oauth(e *Entry) {
	hasOAuthStep := slices.ContainsFunc(e.Steps, func(s Step) bool { return s.Type == StepOAuth })
	if e.Auth == AuthOAuth && e.Type != TypeCustomMCP && !hasOAuthStep {
		v.add("steps", "auth oauth needs an oauth step")
	}
	if hasOAuthStep && e.Auth != AuthOAuth {
		v.add("auth", "an entry with an oauth step has auth oauth")
	}
	p := e.OAuth
	if p == nil {
		return
	}
	if !hasOAuthStep {
		v.add("oauth", "an oauth: block needs an oauth step to use it")
	}
	if !providerRE.MatchString(p.Provider) {
		v.add("oauth.provider", "%q is not a lowercase identifier (it names QUIVER_OAUTH_<PROVIDER>_CLIENT_ID)", p.Provider)
	}
	if !isHTTPS(p.AuthorizationURL) {
		v.add("oauth.authorization_url", "%q is not an https URL", p.AuthorizationURL)
	}
	if !isHTTPS(p.TokenURL) {
		v.add("oauth.token_url", "%q is not an https URL", p.TokenURL)
	}
	if p.RevocationURL != "" && !isHTTPS(p.RevocationURL) {
		v.add("oauth.revocation_url", "%q is not an https URL", p.RevocationURL)
	}
	switch p.TokenAuth {
	case "", TokenAuthPost, TokenAuthBasic:
	default:
		v.add("oauth.token_auth", "%q is not %s or %s", p.TokenAuth, TokenAuthPost, TokenAuthBasic)
	}
	v.oauthFlow(p)
	for i, s := range p.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\n") {
			v.add(field("oauth", "scopes", i), "%q is not a single scope", s)
		}
	}
}

// uniqueID checks that id, at path, is a lowercase identifier not seen
// before among its kind (what), and records it.
func (v *validator) uniqueID(path, what, id string, seen map[string]bool) {
	switch {
	case id == "":
		v.add(path, "is required")
	case !idRE.MatchString(id):
		v.add(path, "%q is not a lowercase identifier", id)
	case seen[id]:
		v.add(path, "duplicate %s %q", what, id)
	}
	seen[id] = true
}

func (v *validator) actions(e *Entry) {
	names := map[string]bool{}
	for i := range e.Actions {
		a := &e.Actions[i]
		at := func(rest ...any) string { return field(append([]any{"actions", i}, rest...)...) }
		v.uniqueID(at("name"), "action name", a.Name, names)
		if strings.TrimSpace(a.Description) == "" {
			v.add(at("description"), "is required")
		}
		if a.Annotations == nil { // API.md's Action always has them
			v.add(at("annotations"), "is required")
		}
		if want := RetryableFrom(a.Annotations); a.Retryable != want {
			v.add(at("retryable"), "is %t but the annotations say %t (retryable iff readOnlyHint or idempotentHint)", a.Retryable, want)
		}
		v.schema(a.SchemaYAML, at("input_schema"))
	}
}

// schema checks the top of an action's input schema: an object whose
// required names are among its properties.
func (v *validator) schema(s map[string]any, at string) {
	if s == nil {
		return
	}
	if t, ok := s["type"]; ok && t != "object" {
		v.add(at+".type", "must be object, not %v", t)
	}
	props, _ := s["properties"].(map[string]any)
	if p, ok := s["properties"]; ok && props == nil {
		v.add(at+".properties", "must be a mapping, not %T", p)
	}
	req, ok := s["required"]
	if !ok {
		return
	}
	list, isList := req.([]any)
	if !isList {
		v.add(at+".required", "must be a list of property names")
		return
	}
	for _, r := range list {
		name, _ := r.(string)
		if _, ok := props[name]; !ok {
			v.add(at+".required", "names %v, which is not a property", r)
		}
	}
}

// RetryableFrom is the retryability rule: an action is retryable exactly
// when its annotations say it is read-only or idempotent.
func RetryableFrom(a *Annotations) bool {
	if a == nil {
		return false
	}
	return (a.ReadOnlyHint != nil && *a.ReadOnlyHint) || (a.IdempotentHint != nil && *a.IdempotentHint)
}

func isHTTPS(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != ""
}
