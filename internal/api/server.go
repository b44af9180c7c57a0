// Package api is Quiver's HTTP layer: Gin routes, request decoding, the
// error envelope, API-key authentication and the per-request middleware
// (request IDs, logs, metrics, body limits). Handlers are thin: they bind,
// call one domain method and write the result. They never write SQL and
// never pick a status code by hand (errors.go maps codes to statuses).
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// Deps is what the API needs.
type Deps struct {
	Accounts  *accounts.Service
	Tools     *toolconfig.Service
	Agents    *agents.Service
	Calls     *calls.Engine
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	BodyLimit int64
	// RequestTimeout bounds every request's context (zero: no bound), so
	// that a database that stalls with its connections open ends a
	// request with 503 rather than holding it forever. It must outlast a
	// call: the dispatch itself runs detached, but its answer waits.
	RequestTimeout time.Duration
	// Ready reports whether the database (and Redis, if used) answer.
	Ready func(ctx context.Context) error
	// Extra registers further routes (OAuth callback, agent MCP) on the
	// root router and on the authenticated /api/v1 group.
	Extra []func(root *gin.Engine, authed *gin.RouterGroup)
}

// Server is the HTTP API.
type Server struct {
	Deps
	log    *slog.Logger
	router *gin.Engine
	// allow maps each route path without parameters (trailing slash
	// trimmed) to its Allow header: the methods it takes.
	allow map[string]string
}

// New builds the router.
func New(d Deps) *Server {
	gin.SetMode(gin.ReleaseMode)
	s := &Server{Deps: d, log: d.Logger}
	r := gin.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.UseRawPath = true // keys in paths may hold an escaped '/'
	r.UnescapePathValues = true
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(s.requestID, s.observe, s.recover)
	// Under /api/v1 a request without a valid key learns nothing, not even
	// which routes exist: 401 comes first there too, and without the Allow
	// gin set before the NoMethod chain (holdAllow keeps it for the 405).
	r.NoRoute(s.authenticateAPI, func(c *gin.Context) { s.writeError(c, problem.New(problem.NotFound, "No such route.")) })
	r.NoMethod(holdAllow, s.authenticateAPI, s.methodNotAllowed)

	// handle registers HEAD with every GET (load balancers probe with it).
	handle(r, "GET", "/healthz", func(c *gin.Context) { c.JSON(200, gin.H{"status": "ok"}) })
	handle(r, "GET", "/readyz", s.readyz)
	handle(r, "GET", "/metrics", gin.WrapH(d.Metrics.Handler()))
	handle(r, "GET", "/openapi.json", s.openapi)

	v1 := r.Group("/api/v1")
	authed := v1.Group("", s.authenticate, s.staticFirst, s.readOnly, s.limitBody, s.strictQuery)
	s.registerCatalog(authed)
	s.registerTools(authed)
	s.registerAgents(authed)
	s.registerCalls(authed)
	for _, extra := range d.Extra {
		extra(r, authed)
	}
	s.allow = staticAllow(r.Routes())
	s.router = r
	return s
}

// staticAllow maps each path registered without parameters (trailing
// slash trimmed) to its Allow header.
func staticAllow(routes gin.RoutesInfo) map[string]string {
	methods := map[string][]string{}
	for _, rt := range routes {
		if strings.ContainsAny(rt.Path, ":*") {
			continue
		}
		p := strings.TrimSuffix(rt.Path, "/")
		if !slices.Contains(methods[p], rt.Method) {
			methods[p] = append(methods[p], rt.Method)
		}
	}
	allow := make(map[string]string, len(methods))
	for p, ms := range methods {
		slices.Sort(ms)
		allow[p] = strings.Join(ms, ", ")
	}
	return allow
}

// staticAllowOf is the Allow header of the request's path, if that path is
// a route without parameters.
func (s *Server) staticAllowOf(c *gin.Context) (string, bool) {
	allow, ok := s.allow[strings.TrimSuffix(c.Request.URL.Path, "/")]
	return allow, ok
}

// ginAllowKey is where holdAllow keeps the Allow header gin computed.
const ginAllowKey = "api.ginAllow"

// holdAllow takes off the response the Allow header gin sets before the
// NoMethod chain runs, so that only the 405 carries one: a 401 must not
// tell a caller without a key which methods a path takes.
func holdAllow(c *gin.Context) {
	h := c.Writer.Header()
	c.Set(ginAllowKey, h.Get("Allow"))
	h.Del("Allow")
}

// methodNotAllowed answers 405 with Allow. For a path that is a route of
// its own, Allow names that route's methods: gin's also counts siblings
// with a parameter that match the path. Otherwise it is gin's, in the same
// sorted form.
func (s *Server) methodNotAllowed(c *gin.Context) {
	allow, ok := s.staticAllowOf(c)
	if !ok {
		allow = sortedAllow(c.GetString(ginAllowKey))
	}
	if allow != "" {
		c.Header("Allow", allow)
	}
	s.writeError(c, &problem.Error{Code: problem.BadRequest, Status: http.StatusMethodNotAllowed, Message: "This route does not take that method."})
}

// sortedAllow sorts the methods of an Allow header's value.
func sortedAllow(v string) string {
	if v == "" {
		return ""
	}
	ms := strings.Split(v, ", ")
	slices.Sort(ms)
	return strings.Join(slices.Compact(ms), ", ")
}

// staticFirst answers 405 for a path that is a route of its own but was
// matched, for this method, by a sibling with a parameter: GET
// /agents/custom-tools/call is not tool "call" but a route that takes POST.
func (s *Server) staticFirst(c *gin.Context) {
	if !strings.Contains(c.FullPath(), ":") {
		return
	}
	if _, ok := s.staticAllowOf(c); ok {
		s.methodNotAllowed(c)
	}
}

// Handler returns the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.router }

// handle registers a route with and without its trailing slash, and a GET
// for HEAD too (RFC 9110 9.3.2: the same status and headers, no body;
// internal/httpserver sends none and keeps Content-Length that of the GET).
func handle(r gin.IRoutes, method, path string, h ...gin.HandlerFunc) {
	p := strings.TrimSuffix(path, "/")
	methods := []string{method}
	if method == http.MethodGet {
		methods = append(methods, http.MethodHead)
	}
	for _, m := range methods {
		r.Handle(m, p, h...)
		r.Handle(m, p+"/", h...)
	}
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

// requestID takes a sane incoming X-Request-Id or makes one, and puts it
// on the response and in the context for logs. The same new context ends at
// RequestTimeout (one copy of the request for both).
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if len(id) == 0 || len(id) > 128 || !printableASCII(id) {
		id = newRequestID()
	}
	c.Header("X-Request-Id", id)
	ctx := logging.WithRequestID(c.Request.Context(), id)
	if s.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.RequestTimeout)
		defer cancel()
	}
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// observe logs each request and records its metrics, deferred so that a
// request aborted by a panic after its answer began (recover re-panics
// http.ErrAbortHandler) counts and has its line too, with the status it
// had sent.
//
// An agent's MCP endpoint answers Quiver's own failures of a tools/call
// (its database down, a call rejected) as tool errors in a 200: the
// handler notes them (logging.NoteAnswered), and the request's line names
// the failure's code and the status REST would have answered, at that
// status's level, and quiver_mcp_tool_errors_total counts it.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	route := strings.TrimSuffix(c.FullPath(), "/") // routed before any handler runs
	var answered *logging.Answered
	if route == mcpRoute {
		var ctx context.Context
		ctx, answered = logging.WithAnswered(c.Request.Context())
		c.Request = c.Request.WithContext(ctx)
	}
	defer s.record(c, route, start, answered)
	c.Next()
}

// mcpRoute is the route of an agent's MCP endpoint.
const mcpRoute = "/api/v1/agents/:id/mcp"

// record counts and logs a request that ended on route ("" when
// unmatched); answered, if not nil, holds a failure it answered inside a
// success.
func (s *Server) record(c *gin.Context, route string, start time.Time, answered *logging.Answered) {
	if route == "" {
		route = "unmatched"
	}
	status := c.Writer.Status()
	d := time.Since(start)
	method := metricMethod(c.Request.Method)
	s.Metrics.HTTPRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	s.Metrics.HTTPDuration.WithLabelValues(route, method).Observe(d.Seconds())
	level := requestLevel(status)
	attrs := []any{"method", logMethod(c.Request.Method), "route", route,
		"status", status, "duration_ms", float64(d.Microseconds()) / 1000, "bytes", c.Writer.Size()}
	if answered != nil {
		if fs, code := answered.Failure(); fs != 0 {
			s.Metrics.MCPToolErrors.WithLabelValues(code).Inc()
			level = max(level, requestLevel(fs))
			attrs = append(attrs, "tool_error", code, "tool_error_status", fs)
		}
	}
	s.log.Log(c.Request.Context(), level, "request", attrs...)
}

// maxLoggedMethod is how much of a request's method its log line keeps.
// HTTP's own are far shorter; an invented one may be as long as the
// request head allows (a megabyte), which each request would write to the
// log whole.
const maxLoggedMethod = 32

// logMethod is the method of a request's log line: the request's, cut to
// maxLoggedMethod bytes (a method is a token, ASCII only, so any cut is
// a whole character) with "…" marking the cut.
func logMethod(m string) string {
	if len(m) <= maxLoggedMethod {
		return m
	}
	return m[:maxLoggedMethod] + "…"
}

// requestLevel is the level of a request's log line. ERROR is for what
// Quiver's operator must look at: its own failure (500) or its database's
// or Redis's (503). A tool's server failing (502, 504) is the tool's
// owner's to fix, and an outage of one would otherwise page on every call:
// WARN.
func requestLevel(status int) slog.Level {
	switch {
	case status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return slog.LevelWarn
	case status >= 500:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// metricMethod is the method label of a request's metrics: any method
// beyond HTTP's own is OTHER, so a client inventing methods cannot create
// series without bound.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// recover turns a panic into a 500 envelope without a stack trace.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(c.Request.Context(), "panic", "value", v)
			if c.Writer.Written() {
				// The answer has begun: an envelope after it would read as
				// part of it. Abort, and the connection closes.
				panic(http.ErrAbortHandler)
			}
			s.writeError(c, problem.New(problem.Internal, "Something went wrong on our side; the request ID helps us find it."))
		}
	}()
	c.Next()
}

// readyz answers whether the database and Redis answer, and 503 at once
// when the server is stopping (ErrShuttingDown). The answer names
// what is down; why (addresses, users, driver messages) goes to the log
// only, since the endpoint needs no key.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if s.Ready != nil {
		if err := s.Ready(ctx); errors.Is(err, ErrShuttingDown) {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": problem.Unavailable, "message": "Not ready: shutting down."})
			return
		} else if err != nil {
			s.log.WarnContext(ctx, "not ready", "error", err)
			what := "a dependency does not answer"
			var down *NotReady
			if errors.As(err, &down) {
				what = strings.Join(down.Components, " and ") + " do not answer"
				if len(down.Components) == 1 {
					what = down.Components[0] + " does not answer"
				}
			}
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": problem.Unavailable, "message": "Not ready: " + what + "."})
			return
		}
	}
	c.JSON(200, gin.H{"status": "ready"})
}

// ErrShuttingDown is Deps.Ready's answer once the server is stopping:
// /readyz answers 503, so that a load balancer sends new requests
// elsewhere, and logs nothing, as the stop was logged once.
var ErrShuttingDown = errors.New("shutting down")

// NotReady is a readiness check's error: the components that did not
// answer, and why.
type NotReady struct {
	Components []string
	Errs       []error
}

// Add records that component did not answer, with err.
func (e *NotReady) Add(component string, err error) {
	e.Components = append(e.Components, component)
	e.Errs = append(e.Errs, fmt.Errorf("%s: %w", component, err))
}

func (e *NotReady) Error() string { return errors.Join(e.Errs...).Error() }

func (e *NotReady) Unwrap() []error { return e.Errs }
