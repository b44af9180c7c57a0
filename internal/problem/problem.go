// Package problem holds the typed errors the domain packages return to the
// API: each carries a stable code (the "error" field of the HTTP envelope), a
// sentence for a person, and optional extra fields. Error.HTTPStatus is the one
// mapping of a code to an HTTP status; domain packages never pick one.
package problem

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable error code, as listed in API.md.
type Code string

// The codes of API.md's error table, plus the few this server adds.
const (
	InvalidJSON            Code = "invalid_json"
	InvalidIdempotencyKey  Code = "invalid_idempotency_key"
	IdempotencyKeyRequired Code = "idempotency_key_required"
	BadRequest             Code = "bad_request"
	Unauthorized           Code = "unauthorized"
	Forbidden              Code = "forbidden"
	NotFound               Code = "not_found"
	IdempotencyKeyReused   Code = "idempotency_key_reused"
	RequestInProgress      Code = "request_in_progress"
	OutcomeUnknownConflict Code = "tool_outcome_unknown" // 409: a later answer for a terminal key
	ToolNotConfigured      Code = "tool_not_configured"
	PayloadTooLarge        Code = "payload_too_large"
	ValidationError        Code = "validation_error"
	InvalidArguments       Code = "invalid_arguments"
	RateLimited            Code = "rate_limited"
	ToolUnreachable        Code = "tool_unreachable"
	UpstreamAuthFailed     Code = "upstream_auth_failed"
	UpstreamRefused        Code = "upstream_refused"
	Unavailable            Code = "unavailable"
	Internal               Code = "internal"
)

// Error is a typed error for the API envelope.
type Error struct {
	Code    Code
	Message string
	// Fields names each bad input field (validation_error, invalid_arguments).
	Fields map[string]string
	// Extra holds further envelope fields, such as next_configuration_step.
	Extra map[string]any
	// Status overrides the code's usual HTTP status; only the call engine
	// uses it, for the first answer of an unknown outcome (504, not 409).
	Status int
	// RetryAfter, in seconds, sets the Retry-After header when positive.
	RetryAfter int
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Validation returns a validation_error naming fields.
func Validation(message string, fields map[string]string) *Error {
	return &Error{Code: ValidationError, Message: message, Fields: fields}
}

// As returns err as an *Error, if it is one.
func As(err error) (*Error, bool) {
	var p *Error
	ok := errors.As(err, &p)
	return p, ok
}

// HTTPStatus is the one place an error code becomes an HTTP status (or
// the Status override, when set).
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	switch e.Code {
	case InvalidJSON, InvalidIdempotencyKey, IdempotencyKeyRequired, BadRequest:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case IdempotencyKeyReused, RequestInProgress, OutcomeUnknownConflict,
		ToolNotConfigured:
		return http.StatusConflict
	case PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case ValidationError, InvalidArguments:
		return http.StatusUnprocessableEntity
	case RateLimited:
		return http.StatusTooManyRequests
	case ToolUnreachable, UpstreamAuthFailed, UpstreamRefused:
		return http.StatusBadGateway
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
