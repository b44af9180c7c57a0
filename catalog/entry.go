package catalog

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Type says how a catalog tool is reached.
type Type string

// The ways a tool can be reached.
const (
	TypeBuiltin   Type = "builtin"    // implemented in this server
	TypeMCP       Type = "mcp"        // a hosted MCP server the catalog names
	TypeCustomMCP Type = "custom_mcp" // an MCP server whose URL the user provides
)

// Auth says what a tool needs to authenticate.
type Auth string

// The kinds of authentication a tool can need.
const (
	AuthNone   Auth = "none"
	AuthAPIKey Auth = "api_key"
	AuthOAuth  Auth = "oauth"
)

// StepType is the kind of a configuration step.
type StepType string

// The kinds of configuration step.
const (
	StepForm  StepType = "form"  // the user fills in fields
	StepOAuth StepType = "oauth" // the user authorizes at a provider
)

// FieldType is the JSON type a form field accepts.
type FieldType string

// The field types a form step can ask for.
const (
	FieldString  FieldType = "string"
	FieldURL     FieldType = "url"     // an http:// or https:// URL
	FieldEnum    FieldType = "enum"    // one of Options
	FieldObject  FieldType = "object"  // a JSON object of string values (e.g. headers)
	FieldBoolean FieldType = "boolean" // true or false
	FieldInteger FieldType = "integer"
)

// Entry is one tool of the catalog, as loaded from its YAML file.
type Entry struct {
	Name        string   `yaml:"name" json:"name"`
	Type        Type     `yaml:"type" json:"type"`
	Title       string   `yaml:"title" json:"title"`
	Description string   `yaml:"description" json:"description"`
	Categories  []string `yaml:"categories" json:"categories"`
	Auth        Auth     `yaml:"auth" json:"auth"`
	// Connector names the package in connectors/ that reaches the tool:
	// "tavily", "browser", "http-request" or "mcp".
	Connector string `yaml:"connector" json:"-"`
	// MCPURL is the endpoint of a hosted MCP server (type mcp).
	MCPURL string `yaml:"mcp_url,omitempty" json:"-"`
	// OAuth describes the provider of the tool's oauth step, if it has one.
	OAuth *OAuthProvider `yaml:"oauth,omitempty" json:"-"`
	Steps []Step         `yaml:"steps" json:"config_steps"`
	// Actions is set for tools whose actions are fixed (builtins); MCP tools
	// discover theirs at run time.
	Actions []Action `yaml:"actions,omitempty" json:"actions,omitempty"`
}

// Step is one configuration step of an entry.
type Step struct {
	ID          string   `yaml:"id" json:"step"`
	Type        StepType `yaml:"type" json:"type"`
	Title       string   `yaml:"title" json:"title"`
	Description string   `yaml:"description" json:"description"`
	Fields      []Field  `yaml:"fields,omitempty" json:"fields,omitempty"`
	// Verify asks the connector to check the credentials gathered so far
	// before the step is accepted.
	Verify bool `yaml:"verify,omitempty" json:"-"`
}

// Field is one input of a form step.
//
// A field may depend on another field of its step: RequiredWhen (YAML
// required_when) maps the name of an enum field of the same step to the
// values under which this field is used, e.g.
//
//	required_when: {auth_type: [bearer, header]}
//
// When every named field has one of its listed values (after defaults), the
// field is required; otherwise it is not used, and an answer that gives it
// anyway is refused rather than stored: a value the configuration would
// never use is a mistake the user should hear about (a token sent with
// auth_type none usually means auth_type was forgotten). Such a field says
// required: false and has no default; a blank string answers nothing.
type Field struct {
	Name        string    `yaml:"name" json:"name"`
	Label       string    `yaml:"label" json:"label"`
	Description string    `yaml:"description,omitempty" json:"description,omitempty"`
	Type        FieldType `yaml:"type" json:"type"`
	Required    bool      `yaml:"required" json:"required"`
	Secret      bool      `yaml:"secret" json:"secret"`
	Pattern     string    `yaml:"pattern,omitempty" json:"pattern,omitempty"`
	Options     []string  `yaml:"options,omitempty" json:"options,omitempty"`
	Default     string    `yaml:"default,omitempty" json:"default,omitempty"`
	// RequiredWhen is the condition under which the field is used and
	// required; see Field.
	RequiredWhen map[string][]string `yaml:"required_when,omitempty" json:"required_when,omitempty"`

	re *regexp.Regexp // Pattern, compiled once at load
}

// Matches reports whether s matches the field's pattern (true when it has
// none).
func (f *Field) Matches(s string) bool {
	if f.Pattern == "" {
		return true
	}
	if f.re == nil { // a Field built by hand rather than loaded
		return regexp.MustCompile(f.Pattern).MatchString(s)
	}
	return f.re.MatchString(s)
}

// Conditional reports whether the field has a RequiredWhen condition.
func (f *Field) Conditional() bool { return len(f.RequiredWhen) > 0 }

// Used reports whether the field is used, given the step's answers: value
// returns the accepted value of a field of the step. known is false when a
// field the condition names has no accepted value, so the answer cannot be
// told (that field's own error says why). A field without a condition is
// always used.
func (f *Field) Used(value func(name string) (string, bool)) (used, known bool) {
	used = true
	for name, want := range f.RequiredWhen {
		v, ok := value(name)
		if !ok {
			return false, false
		}
		used = used && slices.Contains(want, v)
	}
	return used, true
}

// Condition describes RequiredWhen for a person, e.g. "auth_type is bearer
// or header".
func (f *Field) Condition() string {
	names := make([]string, 0, len(f.RequiredWhen))
	for name := range f.RequiredWhen {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " is " + strings.Join(f.RequiredWhen[name], " or ")
	}
	return strings.Join(parts, " and ")
}

// OAuthProvider is the data of an OAuth 2.0 provider. The platform's client
// ID and secret come from QUIVER_OAUTH_<PROVIDER>_CLIENT_ID / _CLIENT_SECRET.
type OAuthProvider struct {
	Provider         string            `yaml:"provider"`
	AuthorizationURL string            `yaml:"authorization_url"`
	TokenURL         string            `yaml:"token_url"`
	Scopes           []string          `yaml:"scopes"`
	PKCE             bool              `yaml:"pkce"`
	ExtraAuthParams  map[string]string `yaml:"extra_auth_params,omitempty"`
	// TokenAuth is how the client authenticates at the token endpoint, by
	// its RFC 8414 name: client_secret_post (the default: id and secret in
	// the form) or client_secret_basic (HTTP Basic).
	TokenAuth string `yaml:"token_auth,omitempty"`
	// RevocationURL is the provider's RFC 7009 token revocation endpoint,
	// where a disconnected tool's tokens are revoked; empty when it has
	// none (a provider with another way of revoking, as GitHub's and
	// Slack's APIs, has none here), or when revoking one token ends more
	// than the tool's grant: Google's endpoint ends everything the user
	// granted the platform's client, so a disconnected tool would take the
	// user's other tools with it.
	RevocationURL string `yaml:"revocation_url,omitempty"`
}

// The client authentication methods at a token endpoint (RFC 8414's
// token_endpoint_auth_methods_supported) an OAuthProvider may name.
const (
	TokenAuthPost  = "client_secret_post"
	TokenAuthBasic = "client_secret_basic"
)

// Action is a fixed action of a builtin tool.
type Action struct {
	Name        string          `yaml:"name" json:"name"`
	Description string          `yaml:"description" json:"description"`
	Retryable   bool            `yaml:"retryable" json:"retryable"`
	Annotations *Annotations    `yaml:"annotations,omitempty" json:"annotations,omitempty"`
	InputSchema json.RawMessage `yaml:"-" json:"input_schema"`
	// SchemaYAML is the input schema as written in the YAML file; Load turns
	// it into InputSchema.
	SchemaYAML map[string]any `yaml:"input_schema" json:"-"`
}

// Annotations are the MCP tool annotations that decide retryability.
type Annotations struct {
	Title           string `yaml:"title,omitempty" json:"title,omitempty"`
	ReadOnlyHint    *bool  `yaml:"readOnlyHint,omitempty" json:"readOnlyHint,omitempty"`
	IdempotentHint  *bool  `yaml:"idempotentHint,omitempty" json:"idempotentHint,omitempty"`
	DestructiveHint *bool  `yaml:"destructiveHint,omitempty" json:"destructiveHint,omitempty"`
	OpenWorldHint   *bool  `yaml:"openWorldHint,omitempty" json:"openWorldHint,omitempty"`
}

// Equal reports whether a and b say the same, a hint left out differing
// from one given as false; two nil Annotations are equal.
func (a *Annotations) Equal(b *Annotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	same := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Title == b.Title && same(a.ReadOnlyHint, b.ReadOnlyHint) && same(a.IdempotentHint, b.IdempotentHint) &&
		same(a.DestructiveHint, b.DestructiveHint) && same(a.OpenWorldHint, b.OpenWorldHint)
}
