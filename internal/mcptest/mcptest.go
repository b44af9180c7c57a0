// Package mcptest runs in-process MCP servers, built with the official Go
// SDK and served over streamable HTTP by httptest, for tests of Quiver as an
// MCP client. Three servers model what users connect: Mail (a mail gateway
// whose tools have permission tiers and answer JSON inside text content),
// Inbox (a business inbox that refuses a bad key with HTTP 401 before any tool
// runs) and Counter (side-effect counters, a slow tool, a tool whose
// connection is dropped after it acted, a failing tool, and enough tools for
// tools/list to need several pages).
//
// Each server counts initialize requests, HTTP requests and tool executions,
// so tests can assert how often a client connected and whether a tool ran. It
// works in stateful (Mcp-Session-Id) and stateless modes.
//
// It owns test fixtures only: it must never be imported by non-test code
// paths of the server binary.
package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind names one of the test servers.
type Kind string

// The test servers.
const (
	Mail    Kind = "mail"    // modelled on a mail gateway with approval tiers
	Inbox   Kind = "inbox"   // modelled on a business inbox with API keys
	Counter Kind = "counter" // side-effect counters and failure modes
)

// InboxKey is the key the Inbox server accepts when Options.RequireBearer is
// empty, as "Authorization: Bearer …" or "X-Api-Key: …".
const InboxKey = "sydbar_test_key_1"

// Options configures a test server.
type Options struct {
	// Stateless serves without sessions: every request stands alone.
	Stateless bool
	// JSONResponse answers requests with a JSON body rather than an event
	// stream.
	JSONResponse bool
	// RequireBearer, when set, refuses with 401 any request whose
	// Authorization header is not "Bearer <RequireBearer>". The Inbox
	// server also accepts the key as X-Api-Key, and requires InboxKey when
	// this is empty.
	RequireBearer string
	// Authorize, when set, refuses with 401 any request whose bearer token
	// it does not accept: a server checking tokens an OAuth provider issued
	// and may expire or revoke.
	Authorize func(token string) bool
	// RequireHeader refuses with 401 any request missing one of these
	// header values.
	RequireHeader map[string]string
	// ResourceMetadata, when set, makes a 401 carry
	// `WWW-Authenticate: Bearer resource_metadata="<ResourceMetadata>"`, as a
	// server protected by OAuth does (RFC 9728).
	ResourceMetadata string
	// PageSize is the tools/list page size; zero means 5 for Counter and the
	// SDK's default otherwise.
	PageSize int
	// SlowDelay is how long Counter's slow tool takes; zero means 2s.
	SlowDelay time.Duration
	// RefuseStatus is the HTTP status of a refused request: 401 when zero;
	// 403 models a server that knows the credentials and denies them.
	RefuseStatus int
	// Wrap, when set, wraps the SDK's handler, inside the counting and
	// credential checks: a test changes with it what the server answers on
	// the wire (a rewritten header, a status of its own).
	Wrap func(http.Handler) http.Handler
}

// Server is a running test server.
type Server struct {
	// URL is the MCP endpoint.
	URL string

	kind Kind
	opts Options
	ts   *httptest.Server

	handler atomic.Pointer[mcp.StreamableHTTPHandler]

	mu       sync.Mutex
	mcp      *mcp.Server
	retired  []*mcp.Server
	inits    int
	requests int
	calls    map[string]int
	headers  []http.Header
	seq      atomic.Int64
	dropped  map[string]bool // tools DropTool hid
	announce int             // tools/call answers still to carry a list_changed notice
	listings int             // tools/list requests without a cursor
}

// Start starts a test server of the given kind and stops it when the test
// ends.
func Start(t testing.TB, kind Kind, opts Options) *Server {
	t.Helper()
	if kind == Counter && opts.PageSize == 0 {
		opts.PageSize = 5
	}
	if opts.SlowDelay == 0 {
		opts.SlowDelay = 2 * time.Second
	}
	if opts.RefuseStatus == 0 {
		opts.RefuseStatus = http.StatusUnauthorized
	}
	s := &Server{kind: kind, opts: opts, calls: map[string]int{}, dropped: map[string]bool{}}
	s.swap()
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.Load().ServeHTTP(w, r) })
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	s.ts = httptest.NewServer(s.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})))
	s.URL = s.ts.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// swap installs a fresh SDK server and handler, so earlier sessions are
// unknown to it.
func (s *Server) swap() {
	srv := s.newMCPServer()
	s.mu.Lock()
	if s.mcp != nil {
		s.retired = append(s.retired, s.mcp)
	}
	s.mcp = srv
	s.mu.Unlock()
	s.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: s.opts.Stateless, JSONResponse: s.opts.JSONResponse}))
}

func (s *Server) newMCPServer() *mcp.Server {
	opts := &mcp.ServerOptions{PageSize: s.opts.PageSize, Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcptest-" + string(s.kind), Version: "1.0.0"}, opts)
	s.installGate(srv)
	switch s.kind {
	case Mail:
		s.addMailTools(srv)
	case Inbox:
		s.addInboxTools(srv)
	case Counter:
		s.addCounterTools(srv)
	default:
		panic("mcptest: unknown kind " + string(s.kind))
	}
	return srv
}

// Initializes returns how many initialize requests the server received.
func (s *Server) Initializes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inits
}

// Requests returns how many HTTP requests the server received, refused ones
// included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Calls returns how many times tool ran (for Counter's slow tool: finished).
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

// Cancelled returns how many runs of tool ended because the client
// cancelled them (Counter's slow tool).
func (s *Server) Cancelled(tool string) int { return s.Calls(tool + ":cancelled") }

// Headers returns a copy of the headers of every request received so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]http.Header, len(s.headers))
	for i, h := range s.headers {
		out[i] = h.Clone()
	}
	return out
}

// ForgetSessions replaces the server's state as a restarted process behind a
// load balancer would: earlier session IDs get 404, but open connections stay
// up, so a client learns of it only on its next request.
func (s *Server) ForgetSessions() { s.swap() }

// Restart forgets every session and closes every open client connection, as
// a restarted process does.
func (s *Server) Restart() {
	s.swap()
	s.ts.CloseClientConnections()
	s.closeRetired()
}

// AddTool adds a read-only tool named name, and notifies connected sessions
// that the tool list changed.
func (s *Server) AddTool(name string) {
	s.mu.Lock()
	srv := s.mcp
	s.mu.Unlock()
	addDummy(srv, name)
}

// Add adds t, with its schema and annotations as given, and notifies
// connected sessions that the tool list changed. It answers {"ok": true}
// and counts its calls (Calls).
func (s *Server) Add(t *mcp.Tool) {
	s.mu.Lock()
	srv := s.mcp
	s.mu.Unlock()
	s.add(srv, t, func(map[string]any) (*mcp.CallToolResult, error) { return jsonText(map[string]bool{"ok": true}), nil })
}

// Close stops the server: later connections are refused. It is safe to call
// more than once.
func (s *Server) Close() {
	s.ts.CloseClientConnections()
	s.mu.Lock()
	if s.mcp != nil {
		s.retired = append(s.retired, s.mcp)
		s.mcp = nil
	}
	s.mu.Unlock()
	s.closeRetired()
	s.ts.Close()
}

func (s *Server) closeRetired() {
	s.mu.Lock()
	retired := s.retired
	s.retired = nil
	s.mu.Unlock()
	for _, srv := range retired {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	}
}

func (s *Server) count(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[tool]++
	return s.calls[tool]
}

// rpcPeek is the part of a JSON-RPC request the middleware looks at.
type rpcPeek struct {
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// middleware counts requests, checks credentials before anything else runs,
// counts initialize requests, and drops the connection of a call to
// drop_after_act after counting it.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()

		if msg, ok := s.authorize(r); !ok {
			if s.opts.ResourceMetadata != "" {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.opts.ResourceMetadata+`"`)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(s.opts.RefuseStatus)
			json.NewEncoder(w).Encode(map[string]string{"error": "unauthorized", "message": msg})
			return
		}

		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "cannot read body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var peek rpcPeek
			if json.Unmarshal(body, &peek) == nil {
				switch {
				case peek.Method == "initialize":
					s.mu.Lock()
					s.inits++
					s.mu.Unlock()
				case peek.Method == "tools/call" && peek.Params.Name == "drop_after_act" && s.kind == Counter:
					s.count("drop_after_act")
					// The tool acted; the answer never leaves.
					panic(http.ErrAbortHandler)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorize reports whether r carries the credentials the server wants, and
// if not, the message its refusal (401, or Options.RefuseStatus) carries.
func (s *Server) authorize(r *http.Request) (string, bool) {
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key := s.opts.RequireBearer
	if s.kind == Inbox {
		if key == "" {
			key = InboxKey
		}
		if bearer != key && r.Header.Get("X-Api-Key") != key {
			return "This key doesn't check out. Create a new one in Sydbar under Settings → Agents.", false
		}
	} else if key != "" && bearer != key {
		return "A valid bearer token is required.", false
	}
	if s.opts.Authorize != nil && !s.opts.Authorize(bearer) {
		return "The access token is missing, invalid or expired.", false
	}
	for name, want := range s.opts.RequireHeader {
		if r.Header.Get(name) != want {
			return "Header " + name + " is missing or wrong.", false
		}
	}
	return "", true
}
