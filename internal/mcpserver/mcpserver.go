// Package mcpserver serves each agent's tools as a streamable-HTTP MCP
// server at /api/v1/agents/{id}/mcp, built on the official Go SDK.
//
// It owns the MCP face of an agent: which tools/list entries an agent has
// (every action of every configured tool attached to it, named
// {tool_name}__{action}; for a read-only API key only those annotated
// read-only, the ones it may call: readonly.go), their input schemas, and
// turning a tools/call into a call of the call engine and the engine's
// answer into a CallToolResult.
// It must never run a tool itself, decide idempotency, retry a call, or touch
// the database: every tools/call goes through calls.Engine exactly as
// POST /api/v1/agents/custom-tools/call/ does, so the guarantees of API.md
// ("Idempotency") hold unchanged over MCP.
//
// # Requests
//
//	X-API-KEY ─▶ api auth ─▶ serve: body within QUIVER_BODY_LIMIT (else 413 envelope)
//	                           │
//	                           ▼ agent's toolset (cached per account, agent)
//	                           │ 404 envelope if the agent is not the account's
//	                           ▼
//	         SDK stateless handler ─▶ toolset's *mcp.Server ─▶ tools/call
//	                                                              │
//	                     {"tool", "action", "arguments"} ─▶ calls.Engine.Call
//
// The SDK handler runs stateless (no Mcp-Session-Id): any replica answers any
// request, as replicas are stateless (DESIGN.md, "Scale"). Only POST is
// routed: with no event stream to open and no session to end, GET and DELETE
// get the router's 405 like any other method, in the API's envelope and with
// Allow: POST. Answers are plain JSON, not SSE: nothing is streamed.
// Stateful mode is not an option: the SDK answers 404 to a session ID it did
// not create (so a second replica cannot serve a session), refuses the
// 2026-07-28 protocol when stateful, and would pin a session to the
// *mcp.Server it started on, so its tool list would stop following attaches.
//
// A plain tools/call, the hot path, skips the SDK's stateless machinery
// (a session per request and several JSON decodes of the same body): fast.go
// answers it with exactly the bytes the SDK would, and hands everything else
// (initialize, tools/list, notifications, batches, anything unusual) on.
// What it hands on is screened first (gate.go): JSON-RPC's own errors for
// what the SDK would answer in plain text or get wrong (an unknown method,
// an ID it cannot give back, text after the message, a member given twice),
// and the rest goes to the SDK as it came.
//
// # Tool lists
//
// An agent's list is cached for ListTTL (QUIVER_CACHE_TTL). This replica's
// own changes drop it at once (ForgetAgent, ForgetTool: the agent's tools
// or deletion, a tool's deletion, reset or configuration); other replicas
// see them within ListTTL. Results that can be cached (tools/list's among
// them) are marked private with a TTL of 0: a list is one account's own.
// The agent's status is read with its tools and follows the same way:
// while it is paused, every tools/call is a forbidden tool error before
// anything reaches the engine, and tools/list still answers (paused.go).
// A tool whose actions cannot be listed within a few seconds is listed as
// it was last time, or left out, and not asked again for a while
// (discoveryWait, retryDiscovery): a server that hangs does not hold up
// every request to its agents. A tool listed before keeps that list while
// it is read anew (listing.go): only a tool never listed is waited for.
//
// A tool's actions come from its connector's cache, which a stateless MCP
// server cannot be told to renew. So a tools/call of {tool_name}__{action}
// whose tool is listed and whose action is not asks the connector to read
// the tool's list again, within the connector's limits (once per tool per
// QUIVER_MCP_RELIST_INTERVAL, 5 s, for MCP, as for a REST call naming an
// action it lacks); when the new list has the action, the agent's list is
// built anew and the call runs as a listed one (relist.go). Any other name
// is the SDK's unknown tool.
//
// # Names
//
// A name is {tool_name}__{action}, at most 128 characters of [A-Za-z0-9_.-],
// and means one action of one tool. It depends on the set of attached
// tools and their actions, never on the order they are attached or listed
// in:
//
//   - {tool_name} is the tool's name with characters MCP refuses made '_',
//     runs of '_' made one (it never holds "__", so a name's first "__" ends
//     it), '_' trimmed, cut to 64 characters.
//   - Of tools whose names come out the same ("foo bar", "foo_bar"), the
//     lowest ID keeps the plain name and each other takes _{id}; a suffixed
//     name another tool already has ("up_7", literally) takes a further _2,
//     _3, … . Attaching a tool with a lower ID than one of the same name
//     therefore renames that one. Every attached tool counts, listed or
//     not: one not configured (reset, mid-OAuth) or whose server cannot
//     list its actions keeps its name unlisted, and a call by that name
//     reaches no other tool.
//   - {action} is the action's name with characters MCP refuses made '_',
//     the whole cut to 128. Of a tool's actions that come out the same
//     ("a/b" and "a_b", or names sharing their first 128 characters), the
//     one named so keeps it (else the least name), and each other takes
//     _{8 hex digits of the FNV-1a hash of its name}.
//
// Nothing attached is left out for its name.
//
// # Idempotency over MCP
//
// A non-retryable action's input schema gains a required idempotency_key
// argument (1–255 printable ASCII, no surrounding spaces); for an action
// with an idempotency_key argument of its own, which is passed on
// untouched, Quiver's is quiver_idempotency_key instead (keyName). It is
// taken out of the arguments and used as the Idempotency-Key; the same key
// retried replays the first outcome, even once the tool has left the list
// (reset, detached, deleted): a call of a name not listed whose key
// argument holds one of the account's keys for the action the name ends in
// is that key's call (unlisted.go). The key argument is checked first, as
// the API checks the header; everything else is the engine's to judge, so a
// call is refused with the code REST gives the same call (a duplicate
// member is invalid_json, a read-only API key forbidden before a missing
// key); only arguments that are not an object, which fail CallToolRequest's
// schema, are a protocol error (invalid params) before the engine sees
// them. Every engine error becomes a tool error (isError true) whose text is
// the REST API's envelope, {"error": code, "message": …}, with retry_after
// where REST sets Retry-After.
//
// # Output schemas
//
// An action whose tool declared an outputSchema is listed with it, and its
// successful results carry the tool's structured content, which a client
// may check against it; its error results, Quiver's refusals included,
// carry none (typedResult in call.go).
package mcpserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// DefaultListTTL is how long an agent's tool list is reused before it is
// read again: a change made through another replica shows within about
// this long (this replica's own show at once).
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

// Actions lists a tool's actions as the REST API does: with one shared
// token refresh when the tool's server refuses its OAuth token (an access
// token the provider ended early, or one that came without an expiry), and
// with a re-read of a list that lacks an action a call names (Relist),
// which gets the same refresh.
// *calls.Engine implements it.
type Actions interface {
	Actions(ctx context.Context, accountID, toolID int64) (*toolconfig.Resolved, []connectors.Action, error)
	Relist(ctx context.Context, rt *toolconfig.Resolved) (*toolconfig.Resolved, []connectors.Action, error)
}

// Calls runs calls and finds the account's idempotency keys (as
// GET /api/v1/idempotency-keys/{key} shows them); *calls.Engine implements
// it.
type Calls interface {
	Call(ctx context.Context, req calls.Request) (*calls.Response, error)
	Key(ctx context.Context, accountID int64, key string) (*calls.KeyState, error)
	// CountConflict counts a 409 the engine was asked to leave uncounted
	// (calls.Request.UncountedReuse).
	CountConflict(code problem.Code)
}

var (
	_ Agents  = (*agents.Service)(nil)
	_ Tools   = (*toolconfig.Service)(nil)
	_ Calls   = (*calls.Engine)(nil)
	_ Actions = (*calls.Engine)(nil)
)

// Options configures a Server. Agents, Tools, Actions and Calls are
// required; every other field's zero value means its default.
type Options struct {
	Agents  Agents
	Tools   Tools
	Actions Actions
	Calls   Calls
	Logger  *slog.Logger
	// ListTTL is how long an agent's tool list is cached.
	ListTTL time.Duration
	// BuildTimeout bounds building an agent's tool list.
	BuildTimeout time.Duration
	// MaxBodyBytes caps an MCP request body; zero means the SDK's default.
	MaxBodyBytes int64
	// Version is reported in the initialize answer.
	Version string
	// PublicURL is where Quiver is reached (QUIVER_PUBLIC_URL): a request
	// whose Origin is its origin, or the request's own host, may reach the
	// endpoint; one from any other web origin is refused (origin.go).
	PublicURL string
}

// Server serves agents over MCP.
type Server struct {
	opts    Options
	log     *slog.Logger
	sdkLog  *slog.Logger // the SDK's: its routine lines, which cannot carry a request ID, at debug
	handler *mcp.StreamableHTTPHandler
	sets    *toolsets
	lists   listings // of tools' actions, for builds (listing.go)
	// maxBody is the SDK handler's body limit; negative means none.
	maxBody int64
	// sdkOnly turns the tools/call fast path off (tests compare both).
	sdkOnly bool
	// fastCalls counts the tools/call requests the fast path answered.
	fastCalls atomic.Int64
	// metas are the _meta values the fast path accepted (fastmeta.go).
	metas metaSet
}

// serverKey is the context key of the request's *toolset.
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
	s := &Server{opts: opts, log: opts.Logger, sdkLog: slog.New(logging.Chatter(opts.Logger.Handler())),
		maxBody: opts.MaxBodyBytes, sdkOnly: fastOff()}
	if s.maxBody == 0 {
		s.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	s.sets = newToolsets(s)
	s.handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ts, _ := r.Context().Value(serverKey{}).(*toolset)
		if ts == nil {
			return nil
		}
		return ts.srv
	}, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The endpoint needs an API key in a header, which a page on a
		// rebinding domain cannot send; behind a local reverse proxy the
		// Host header is the public name, which this check would refuse.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		Logger:                     s.sdkLog,
	})
	return s
}

// Register adds the MCP endpoint to the authenticated /api/v1 group, with
// and without its trailing slash. It takes POST alone: the streamable-HTTP
// transport lets a server without a standalone event stream answer GET with
// 405, and one without sessions has none to DELETE.
func (s *Server) Register(rg *gin.RouterGroup) {
	rg.POST("/agents/:id/mcp", s.serve)
	rg.POST("/agents/:id/mcp/", s.serve)
}

// serve answers one MCP request for the account's agent.
func (s *Server) serve(c *gin.Context) {
	if origin := c.Request.Header.Get("Origin"); origin != "" && !s.originAllowed(origin, c.Request.Host) {
		s.writeError(c, problem.New(problem.Forbidden, "A page at %s may not use this MCP endpoint: only Quiver's own origin may.", clipOrigin(origin)))
		return
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != c.Param("id") { // one spelling per ID, as over REST
		s.writeError(c, problem.New(problem.NotFound, "No agent with ID %q.", c.Param("id")))
		return
	}
	var body []byte
	if c.Request.Body != nil {
		if body, err = s.readBody(c.Request); err != nil {
			s.writeError(c, err)
			return
		}
	}
	ctx := c.Request.Context()
	ts, err := s.sets.get(ctx, accounts.PrincipalFrom(ctx).Account, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if body != nil && s.fastCall(c.Writer, c.Request, ts, body) {
		return
	}
	// The toolset, not only its server: a build may reuse the server of
	// an agent whose status changed since (refusePaused).
	r := c.Request.WithContext(context.WithValue(ctx, serverKey{}, ts))
	if body != nil && s.screen(c.Writer, r, body) {
		return
	}
	s.handler.ServeHTTP(c.Writer, r)
}

// readBody reads r's body whole, up to the body limit, and puts it back for
// the SDK. A body over the limit is the API's payload_too_large, as on
// every other route, not the SDK's plain-text 413. A body that could not
// be read whole (the client went away) is put back as far as it was read,
// followed by the rest, and body is nil: the SDK answers it.
func (s *Server) readBody(r *http.Request) (body []byte, err error) {
	if s.maxBody > 0 && r.ContentLength > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	src := r.Body
	var rd io.Reader = src
	if s.maxBody > 0 {
		rd = io.LimitReader(src, s.maxBody+1)
	}
	body, err = io.ReadAll(rd)
	if err != nil {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), src), src}
		return nil, nil
	}
	if s.maxBody > 0 && int64(len(body)) > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{bytes.NewReader(body), src}
	return body, nil
}

// tooLarge is the API's answer to a body over the limit.
func tooLarge(limit int64) error {
	return problem.New(problem.PayloadTooLarge, "The request body is over the %d-byte limit.", limit)
}

// ForgetAgent drops this replica's cached tool list of the account's agent,
// so a change to the agent (its tools, its deletion) shows on the next
// request here. Other replicas see it within ListTTL.
func (s *Server) ForgetAgent(account, agent int64) { s.sets.forgetAgent(account, agent) }

// ForgetTool drops this replica's cached tool lists of the account's agents
// that have the tool attached, so its deletion, reset or new configuration
// shows on the next request here. Other replicas see it within ListTTL.
func (s *Server) ForgetTool(account, tool int64) {
	s.lists.forget(account, tool)
	s.sets.forgetTool(account, tool)
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
	c.Data(status, calls.ContentType, envelope(c.Request.Context(), p, false))
}
