// Package connectors defines how Quiver reaches a tool: one small interface,
// implemented by one package per way of reaching tools (mcp, tavily, browser,
// httprequest). It knows catalog types only: never storage, HTTP handlers or
// the call engine's idempotency rules.
package connectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/quiverhq/quiver/catalog"
)

// Tool is a connected tool as a connector sees it: its catalog entry and its
// decrypted configuration. Connectors must never log Config or Token.
type Tool struct {
	ID        int64
	AccountID int64
	Entry     *catalog.Entry
	// Config holds every configured field, secrets decrypted. Object fields
	// (such as custom-mcp's headers) hold their JSON text.
	Config map[string]string
	// AccessToken is the current OAuth access token, if the tool has one.
	AccessToken string
	// Version changes whenever the tool's configuration or token changes, so
	// connectors can key caches and pooled sessions on (ID, Version).
	Version int64
}

// Action is one action a tool offers.
type Action struct {
	Name string `json:"name"`
	// Title is a name for people (an MCP tool's title), when the tool
	// gives one.
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description"`
	InputSchema json.RawMessage      `json:"input_schema"`
	Retryable   bool                 `json:"retryable"`
	Annotations *catalog.Annotations `json:"annotations,omitempty"`
	// OutputSchema is the JSON Schema (an object) of the action's
	// structured result, when the tool declares one (an MCP tool's
	// outputSchema); nil otherwise.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Equal reports whether a and b say the same in every field: a list read
// again that equals the one before changes nothing that was built on it.
func (a Action) Equal(b Action) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.Retryable == b.Retryable &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		a.Annotations.Equal(b.Annotations)
}

// EntryActions returns the actions of a catalog entry whose actions are fixed
// (the builtin tools): what their connectors' Actions return.
func EntryActions(e *catalog.Entry) []Action {
	out := make([]Action, 0, len(e.Actions))
	for _, a := range e.Actions {
		out = append(out, Action{Name: a.Name, Description: a.Description,
			InputSchema: a.InputSchema, Retryable: a.Retryable, Annotations: a.Annotations})
	}
	return out
}

// Result is the outcome of a call that reached the tool and came back.
type Result struct {
	// Content is the tool's output as JSON.
	Content json.RawMessage
	// IsError is true when the tool ran and reported an error.
	IsError bool
	// MCPContent is true when Content is the MCP content array the tool
	// answered with (text that is not JSON, images, resources...) rather
	// than JSON it produced: the call's answer says so, and the agent MCP
	// endpoint hands the array on as content.
	MCPContent bool
	// Structured is the tool's structured content (MCP structuredContent)
	// when it is not the same JSON as Content: a tool whose one text block
	// holds other JSON than its structured content (a wrapped primitive,
	// say). Nil when Content is the structured content, when there is none,
	// and for error results.
	Structured json.RawMessage
}

// Connector reaches one kind of tool.
type Connector interface {
	// Actions lists what the tool can do. The list may be shared (a
	// connector may hand out its cached copy): callers must not modify it.
	Actions(ctx context.Context, t *Tool) ([]Action, error)
	// Call runs one action. A returned error must be an *Error whose Kind
	// tells whether anything may have reached the tool.
	Call(ctx context.Context, t *Tool, action string, args json.RawMessage) (Result, error)
}

// ActionsAtHand is implemented by connectors that can tell when Actions
// would answer without waiting for anything: CachedActions is then what it
// would answer, and false when Actions has to ask the tool. A caller may
// then skip the bound it puts on the asking.
type ActionsAtHand interface {
	CachedActions(t *Tool) ([]Action, bool)
}

// ActionsRelister is implemented by connectors whose cached actions can lag
// behind the tool's own, because the tool cannot always say that its list
// changed (a stateless MCP server). A caller that found no action of the
// name it wants in what Actions gave asks RelistActions before answering
// that there is none: it may read the list again (within ctx, and no more
// often than the connector allows), and returns the list to look in again,
// nil when it has none. err is the re-list's failure (a *Error) when one
// ran for the caller and failed; the list is then the one cached, if any.
// A re-list the tool refused our OAuth token for (KindUpstreamAuth) is
// worth one more with a refreshed token: a new token is a new Version, a
// re-list of its own that the refused one does not hold back.
type ActionsRelister interface {
	RelistActions(ctx context.Context, t *Tool) ([]Action, error)
}

// Verifier is implemented by connectors that can check a step's credentials
// before the step is accepted. config holds every field gathered so far.
// A problem with a field is returned as a *FieldError.
type Verifier interface {
	Verify(ctx context.Context, entry *catalog.Entry, config map[string]string) error
}

// Kind classifies a failed call by what is known about its effect.
type Kind string

// The kinds of call failure. Only KindOutcomeUnknown means the tool may
// have run; every other kind is a pre-effect rejection.
const (
	KindUnreachable     Kind = "tool_unreachable"     // nothing was sent (connect refused, DNS)
	KindUpstreamAuth    Kind = "upstream_auth_failed" // the server refused our credentials before running anything
	KindRejected        Kind = "rejected"             // the server refused the request's arguments before running it (unknown tool, bad params)
	KindUpstreamRefused Kind = "upstream_refused"     // the server refused the request itself, not its arguments, before running anything (an HTTP 404 or 405, an unsupported protocol version)
	KindUpstreamLimited Kind = "upstream_limited"     // the server refused for its own rate or usage limits before running anything
	KindUnknownAction   Kind = "unknown_action"       // no such action
	KindOutcomeUnknown  Kind = "tool_outcome_unknown" // sent, and no outcome came back
)

// Error is a failed call.
type Error struct {
	Kind    Kind
	Message string
	// RetryAfter is how long the tool's server asked us to wait before
	// trying again (its Retry-After), for KindUpstreamLimited; zero when it
	// gave no delay or retrying will not help soon.
	RetryAfter time.Duration
	// Argument names the argument a KindRejected error refuses, when it is
	// about one; "" when it is about the arguments as a whole.
	Argument string
	Err      error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind.
func Errorf(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// KindOf returns the kind of err, and KindOutcomeUnknown for any error that is
// not an *Error: when in doubt, the tool may have run.
func KindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return KindOutcomeUnknown
}

// FieldError says a configuration field was refused by the tool itself.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Registry maps a catalog entry's connector name to its Connector.
type Registry map[string]Connector

// For returns the connector of entry.
func (r Registry) For(entry *catalog.Entry) (Connector, bool) {
	c, ok := r[entry.Connector]
	return c, ok
}
