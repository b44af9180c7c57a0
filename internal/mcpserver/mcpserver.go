// Package mcpserver serves each agent's tools as a streamable-HTTP MCP
// server at /api/v1/agents/{id}/mcp, built on the official Go SDK.
//
// It owns the MCP face of an agent: which tools/list entries an agent has
// (every action of every configured tool attached to it, named
// {tool_name}__{action}), their input schemas, and turning a tools/call into
// a call of the call engine and the engine's answer into a CallToolResult.
// It must never run a tool itself, decide idempotency, retry a call, or touch
// the database: every tools/call goes through calls.Engine exactly as
// POST /api/v1/agents/custom-tools/call/ does, so the guarantees of API.md
// ("Idempotency") hold unchanged over MCP.
//
// # Requests
//
//	X-API-KEY ─▶ api auth ─▶ serve: agent's toolset (cached per account, agent)
//	                           │ 404 envelope if the agent is not the account's
//	                           ▼
//	         SDK stateless handler ─▶ toolset's *mcp.Server ─▶ tools/call
//	                                                              │
//	                     {"tool", "action", "arguments"} ─▶ calls.Engine.Call
//
// The SDK handler runs stateless (no Mcp-Session-Id): any replica answers any
// request, as replicas are stateless (DESIGN.md, "Scale"). GET and DELETE get
// the SDK's 405. Answers are plain JSON, not SSE: nothing is streamed.
// Stateful mode is not an option: the SDK answers 404 to a session ID it did
// not create (so a second replica cannot serve a session), refuses the
// 2026-07-28 protocol when stateful, and would pin a session to the
// *mcp.Server it started on, so its tool list would stop following attaches.
//
// A plain tools/call, the hot path, skips the SDK's stateless machinery
// (a session per request and several JSON decodes of the same body): fast.go
// answers it with exactly the bytes the SDK would, and hands everything else
// (initialize, tools/list, notifications, batches, anything unusual) to the
// SDK.
//
// # Idempotency over MCP
//
// A non-retryable action's input schema gains a required idempotency_key
// argument (1–255 printable ASCII, no surrounding spaces). It is taken out of
// the arguments and used as the Idempotency-Key; the same key retried replays
// the first outcome. Every engine error becomes a tool error (isError true)
// whose text is the REST API's envelope, {"error": code, "message": …}.
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// DefaultListTTL is how long an agent's tool list is reused before it is
// read again: attaching or detaching a tool shows within about this long.
const DefaultListTTL = time.Second

// DefaultBuildTimeout bounds reading an agent and discovering its tools'
// actions.
const DefaultBuildTimeout = 20 * time.Second

// Agents finds agents; *agents.Service implements it.
type Agents interface {
	Get(ctx context.Context, accountID, id int64) (*agents.Agent, error)
}

// Tools resolves configured tools; *toolconfig.Service implements it.
type Tools interface {
	Resolve(ctx context.Context, accountID, id int64) (*toolconfig.Resolved, error)
}

// Calls runs calls; *calls.Engine implements it.
type Calls interface {
	Call(ctx context.Context, req calls.Request) (*calls.Response, error)
}

var (
	_ Agents = (*agents.Service)(nil)
	_ Tools  = (*toolconfig.Service)(nil)
	_ Calls  = (*calls.Engine)(nil)
)

// Options configures a Server. Agents, Tools and Calls are required; every
// other field's zero value means its default.
type Options struct {
	Agents Agents
	Tools  Tools
	Calls  Calls
	Logger *slog.Logger
	// ListTTL is how long an agent's tool list is cached.
	ListTTL time.Duration
	// BuildTimeout bounds building an agent's tool list.
	BuildTimeout time.Duration
	// MaxBodyBytes caps an MCP request body; zero means the SDK's default.
	MaxBodyBytes int64
	// Version is reported in the initialize answer.
	Version string
}

// Server serves agents over MCP.
type Server struct {
	opts    Options
	log     *slog.Logger
	handler *mcp.StreamableHTTPHandler
	sets    *toolsets
	// maxBody is the SDK handler's body limit; negative means none.
	maxBody int64
	// sdkOnly turns the tools/call fast path off (tests compare both).
	sdkOnly bool
	// fastCalls counts the tools/call requests the fast path answered.
	fastCalls atomic.Int64
}

type serverKey struct{}

// New returns a Server.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ListTTL <= 0 {
		opts.ListTTL = DefaultListTTL
	}
	if opts.BuildTimeout <= 0 {
		opts.BuildTimeout = DefaultBuildTimeout
	}
	if opts.Version == "" {
		opts.Version = "1"
	}
	s := &Server{opts: opts, log: opts.Logger, maxBody: opts.MaxBodyBytes, sdkOnly: fastOff()}
	if s.maxBody == 0 {
		s.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	s.sets = newToolsets(s)
	s.handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(serverKey{}).(*mcp.Server)
		return srv
	}, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The endpoint needs an API key in a header, which a page on a
		// rebinding domain cannot send; behind a local reverse proxy the
		// Host header is the public name, which this check would refuse.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		Logger:                     opts.Logger,
	})
	return s
}

// Register adds the MCP endpoint to the authenticated /api/v1 group, with
// and without its trailing slash.
func (s *Server) Register(rg *gin.RouterGroup) {
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		rg.Handle(method, "/agents/:id/mcp", s.serve)
		rg.Handle(method, "/agents/:id/mcp/", s.serve)
	}
}

// serve answers one MCP request for the account's agent.
func (s *Server) serve(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.writeError(c, problem.New(problem.NotFound, "No agent with ID %q.", c.Param("id")))
		return
	}
	ctx := c.Request.Context()
	ts, err := s.sets.get(ctx, accounts.PrincipalFrom(ctx).Account, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if s.fastCall(c.Writer, c.Request, ts) {
		return
	}
	s.handler.ServeHTTP(c.Writer, c.Request.WithContext(context.WithValue(ctx, serverKey{}, ts.srv)))
}

// writeError answers a request refused before MCP with the API's envelope.
func (s *Server) writeError(c *gin.Context, err error) {
	p, ok := problem.As(err)
	if !ok {
		p = internalProblem(c.Request.Context(), s.log, err)
	}
	status := p.HTTPStatus()
	if p.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	c.Abort()
	c.Data(status, calls.ContentType, envelope(c.Request.Context(), p))
}
