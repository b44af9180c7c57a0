// Package logging sets up Quiver's structured JSON logs (log/slog) and
// carries the request ID in the context so every line logged while serving
// a request names it. It never logs request bodies, keys or secrets.
package logging

import (
	"context"
	"io"
	"log/slog"
	"sync"
)

type ctxKey struct{}

// WithRequestID returns ctx carrying a request ID.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request ID in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// New returns a JSON logger writing to w at level ("debug", "info", "warn",
// "error") that adds request_id from the context of each record.
func New(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(requestIDHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})})
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// Chatter returns a handler for a library's own logger (the MCP SDK's): its
// records below warn are logged at debug. Such a library logs with no
// context, so its lines cannot carry the request ID, and it logs every
// request's routine steps ("server session connected"): at info they would
// be lines of a request without its ID, several for each one.
func Chatter(h slog.Handler) slog.Handler { return chatterHandler{h} }

type chatterHandler struct{ slog.Handler }

func (h chatterHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, chatterLevel(l))
}

func (h chatterHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = chatterLevel(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h chatterHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return chatterHandler{h.Handler.WithAttrs(as)}
}

func (h chatterHandler) WithGroup(name string) slog.Handler {
	return chatterHandler{h.Handler.WithGroup(name)}
}

func chatterLevel(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// An Answered records the failure a request answered inside a success: a
// tools/call over an agent's MCP endpoint answers Quiver's own errors (its
// database down, a rejected call) as tool errors in an HTTP 200, which the
// request's log line and metrics would otherwise show as a success. The
// handler notes the failure (NoteAnswered) and whoever logs the request
// reads it. Of several, the one with the highest status is kept.
type Answered struct {
	mu     sync.Mutex
	status int
	code   string
}

type answeredKey struct{}

// WithAnswered returns ctx carrying a new Answered.
func WithAnswered(ctx context.Context) (context.Context, *Answered) {
	a := new(Answered)
	return context.WithValue(ctx, answeredKey{}, a), a
}

// NoteAnswered records, in the Answered ctx carries (if any), a failure
// answered with the given code, whose HTTP status would have been status.
func NoteAnswered(ctx context.Context, status int, code string) {
	a, _ := ctx.Value(answeredKey{}).(*Answered)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if status > a.status {
		a.status, a.code = status, code
	}
}

// Failure returns the failure noted, status 0 when none was.
func (a *Answered) Failure() (status int, code string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.code
}
