// Package mcp reaches tools served by MCP servers over streamable HTTP, as an
// MCP client built on the official Go SDK. It implements connectors.Connector
// (discovering a server's tools as actions and calling them) and
// connectors.Verifier (checking a custom MCP server's URL and credentials
// before its configuration step is accepted).
//
// It owns the client side of MCP: pooled sessions, tool discovery and its
// cache, mapping results, and classifying failures by what is known about
// their effect. It must never decide idempotency, store anything, retry a
// request that may have reached the server, send credentials to any host but
// the configured one, or log credentials.
//
// # Sessions
//
// A session is initialized once and reused, never once per call:
//
//	tool (ID, Version) ──► slot ──► *mcp.ClientSession ──► one HTTP client
//	                                  (safe for concurrent calls)
//
// The pool holds one slot per (tool ID, Version). The first user connects;
// later users wait for it. A new Version (the tool was reconfigured) retires
// the older slots of the same tool: they close once their last call returns.
// A slot whose session ended (the server closed it, its stream broke) is
// retired and the next user connects afresh; so is one the server replaced,
// naming another Mcp-Session-Id in an answer to the session's own requests
// (the answer still counts: the round tripper takes the header off before
// the SDK, which would fail the request, sees it). A slot unused for
// IdleTimeout is closed. Stateful servers (Mcp-Session-Id) and stateless
// ones both work.
//
// # Calls
//
// tools/call is sent by a fast path of our own (fastcall.go) when the
// negotiated version allows, over connections of its own that it drives on
// the caller's goroutine (h1.go), and through the SDK's session otherwise;
// the two answer alike (TestFastCallMatchesSDK). A fast path that cannot
// connect hands the call to the SDK.
//
// # Classifying a failure
//
// Every MCP request made for a call carries an attempt recorder in its
// context; the HTTP round tripper fills it with what happened on the wire
// (did the POST start, did the dial fail, which status came back). Only the
// first POST of a context claims the recorder, so a later cancellation
// notice cannot overwrite what happened to the call itself. From it:
//
//	POST never started (session already gone)       → reconnect, retry once
//	404 to a request carrying our session ID, its
//	  body no JSON-RPC answer to that request (or
//	  a 400 refusing the session: sessionGone)      → reconnect, retry once
//	dial refused / DNS / egress blocked             → KindUnreachable
//	401 or 403                                      → KindUpstreamAuth
//	429                                             → KindUpstreamLimited, with
//	                                                  its Retry-After
//	JSON-RPC invalid params (arguments the tool's
//	  schema refuses, an unknown tool)              → KindRejected
//	any other JSON-RPC error saying the request
//	  was not processed (parse, invalid request,
//	  unknown method, the MCP header/version/
//	  capability/elicitation refusals)              → KindUpstreamRefused
//	any other 4xx                                   → KindUpstreamRefused
//	any other JSON-RPC error to tools/call          → error result
//	timeout, lost connection, 5xx, anything else    → KindOutcomeUnknown
//
// Retrying is safe only in the first two rows: the server provably did not
// run the request. A JSON-RPC error with any other code (internal error,
// a server's own codes, a tool handler's error) may come after the tool
// acted: the server answered, so it is the call's outcome, an error result
// ({"error": "mcp_error", "code", "message", "data"}) kept and replayed like
// any other, and the key is not released. A result larger than
// MaxResponseBytes is an error result too ({"error": "result_too_large"}):
// the tool ran, and that is its outcome. An event stream that carries only
// other messages (notifications, the server's requests) and no result is
// KindOutcomeUnknown however long it runs, ends or stalls: no outcome came.
// The limit is on the answer; the other messages on a call's stream are
// handled, dropped, and bounded by a budget of their own (callstream.go).
package mcp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// Defaults of Options.
const (
	DefaultDiscoveryTTL     = 60 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultConnectTimeout   = 15 * time.Second
	DefaultDiscoveryTimeout = 15 * time.Second
	DefaultMaxResponseBytes = 16 << 20
	// ProtocolVersion is the MCP version Quiver asks for. It is the newest
	// version with the initialize handshake that servers in use speak; a
	// server may negotiate an older one.
	ProtocolVersion = "2025-11-25"
)

// Options configures a Connector. The zero value of each field means its
// default.
type Options struct {
	// AllowPrivate permits servers on loopback, link-local and private
	// addresses (QUIVER_EGRESS_ALLOW_PRIVATE).
	AllowPrivate bool
	// DiscoveryTTL is how long a tool's discovered actions are cached.
	DiscoveryTTL time.Duration
	// IdleTimeout closes a pooled session unused for this long.
	IdleTimeout time.Duration
	// ConnectTimeout bounds opening a session (connect and initialize).
	ConnectTimeout time.Duration
	// DiscoveryTimeout bounds listing a tool's actions (every page of
	// tools/list together), after its session is open.
	DiscoveryTimeout time.Duration
	// RelistInterval is how old a tool's list must be before a call naming
	// an action missing from it reads it again, and how often at most it
	// is read again so (relist.go; QUIVER_MCP_RELIST_INTERVAL).
	RelistInterval time.Duration
	// MaxResponseBytes caps the size of one response from a server.
	MaxResponseBytes int64
	// SDKCalls sends every tools/call through the SDK's client session
	// instead of the fast path (fastcall.go); tests compare the two.
	SDKCalls bool
	// Logger receives session events; nil discards them. Credentials are
	// never logged.
	Logger *slog.Logger
	// Events is told of the pool's session events, for metrics; its nil
	// fields are no-ops.
	Events SessionEvents
}

// SessionEvents are told when a pooled session opens, fails to open, or is
// retired: rare events, never one per call. They must not block: Retired
// runs under the pool's lock.
type SessionEvents struct {
	Opened  func()
	Failed  func()
	Retired func(reason string) // one of RetireReasons
}

// RetireReasons are the reasons SessionEvents.Retired is given: idle
// (unused for IdleTimeout), reconfigured (a newer Version of the tool),
// ended (the server or the network ended it, or the server no longer knew
// it), replaced (the server named another session), refused (the server
// refused its credentials), closed (the connector closed).
var RetireReasons = []string{"idle", "reconfigured", "ended", "replaced", "refused", "closed"}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.DiscoveryTTL <= 0 {
		out.DiscoveryTTL = DefaultDiscoveryTTL
	}
	if out.IdleTimeout <= 0 {
		out.IdleTimeout = DefaultIdleTimeout
	}
	if out.ConnectTimeout <= 0 {
		out.ConnectTimeout = DefaultConnectTimeout
	}
	if out.DiscoveryTimeout <= 0 {
		out.DiscoveryTimeout = DefaultDiscoveryTimeout
	}
	if out.RelistInterval <= 0 {
		out.RelistInterval = DefaultRelistInterval
	}
	if out.MaxResponseBytes <= 0 {
		out.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Events.Opened == nil {
		out.Events.Opened = func() {}
	}
	if out.Events.Failed == nil {
		out.Events.Failed = func() {}
	}
	if out.Events.Retired == nil {
		out.Events.Retired = func(string) {}
	}
	return out
}

// Connector reaches MCP servers. It is safe for concurrent use; Close it to
// end its sessions.
type Connector struct {
	opts      Options
	transport *http.Transport
	h1        *h1Transport // the tools/call fast path's
	pool      *pool
	discovery *discovery
	targets   targets
}

var (
	_ connectors.Connector = (*Connector)(nil)
	_ connectors.Verifier  = (*Connector)(nil)
)

// New returns a Connector; opts may be nil for the defaults.
func New(opts *Options) *Connector {
	o := opts.withDefaults()
	guard := egress.Options{AllowPrivate: o.AllowPrivate}
	c := &Connector{
		opts:      o,
		transport: egress.Transport(guard),
		h1:        newH1Transport(egress.Dialer(guard).DialContext, nil),
		discovery: newDiscovery(o.DiscoveryTTL, o.RelistInterval),
	}
	c.pool = newPool(c)
	return c
}

// Close ends the background listings (a stale list's, a call's re-list)
// and waits for them, so that none holds a session past it, then ends
// every pooled session and waits for them to close.
func (c *Connector) Close() error {
	c.discovery.stop()
	c.pool.close()
	c.transport.CloseIdleConnections()
	c.h1.close()
	return nil
}

// target is where a tool's server is and what to send it.
type target struct {
	endpoint string
	origin   string            // scheme://host:port, lower case: where credentials may go
	host     string            // for messages and logs
	auth     string            // the Authorization header value, or ""
	headers  map[string]string // extra headers, canonical names
	bearer   bool              // a bearer token was configured (not an OAuth token)
	echo     connectors.Echo   // the credentials, to find in results (hideEchoed)
}

// forbiddenHeader reports whether a header may not be set by a tool's
// configuration: it belongs to HTTP or to the MCP transport.
func forbiddenHeader(canon string) bool {
	switch canon {
	case "Host", "Content-Length", "Content-Type", "Accept", "Connection", "Transfer-Encoding",
		"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
		return true
	}
	return false
}

// resolveTarget reads a tool's endpoint and credentials from its entry and
// configuration. A problem is a *connectors.FieldError naming the field.
func resolveTarget(entry *catalog.Entry, config map[string]string, accessToken string) (*target, error) {
	raw := strings.TrimSpace(config["url"])
	if entry != nil && entry.MCPURL != "" {
		raw = entry.MCPURL
	}
	if raw == "" {
		return nil, &connectors.FieldError{Field: "url", Message: "The MCP server's URL is required."}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, &connectors.FieldError{Field: "url", Message: "The URL must be an absolute http:// or https:// URL."}
	}
	if u.User != nil {
		return nil, &connectors.FieldError{Field: "url", Message: "The URL must not carry a user name or password; use bearer_token or headers."}
	}
	u.Fragment = ""
	t := &target{endpoint: u.String(), origin: origin(u), host: u.Host}
	if tok := strings.TrimSpace(config["bearer_token"]); tok != "" {
		t.auth, t.bearer = "Bearer "+tok, true
	} else if accessToken != "" {
		t.auth = "Bearer " + accessToken
	}
	if h := strings.TrimSpace(config["headers"]); h != "" && h != "{}" && h != "null" {
		var m map[string]string
		if err := json.Unmarshal([]byte(h), &m); err != nil {
			return nil, &connectors.FieldError{Field: "headers", Message: "Headers must be a JSON object of string values."}
		}
		t.headers = make(map[string]string, len(m))
		for name, value := range m {
			// A name that is no HTTP token, or a value net/http will not
			// send, would fail every request as if the server were away.
			canon := http.CanonicalHeaderKey(strings.TrimSpace(name))
			if !httpguts.ValidHeaderFieldName(canon) {
				return nil, &connectors.FieldError{Field: "headers", Message: fmt.Sprintf(
					"%q is not a header name: a header name is letters, digits and !#$%%&'*+-.^_`|~ only.", name)}
			}
			if forbiddenHeader(canon) {
				return nil, &connectors.FieldError{Field: "headers", Message: fmt.Sprintf("The header %q cannot be set.", name)}
			}
			if !httpguts.ValidHeaderFieldValue(value) {
				return nil, &connectors.FieldError{Field: "headers", Message: fmt.Sprintf("The value of header %q must be one line of text.", name)}
			}
			t.headers[canon] = value
		}
	}
	t.echo = connectors.NewEcho(minHidden, t.credentials()...)
	return t, nil
}

// origin is scheme://host:port of u in lower case, with the scheme's default
// port made explicit, so that equal origins compare equal.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port(u)
}

// port is u's port, or its scheme's default one.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// toolTarget resolves a connected tool's target; a configuration problem is
// a pre-effect *connectors.Error.
func (c *Connector) toolTarget(t *connectors.Tool) (*target, error) {
	tgt, err := c.targets.resolve(t.Entry, t.Config, t.AccessToken)
	if err != nil {
		kind := connectors.KindRejected
		if fe, ok := err.(*connectors.FieldError); ok && fe.Field == "url" {
			kind = connectors.KindUnreachable
		}
		return nil, connectors.Errorf(kind, err, "the tool's configuration is not usable")
	}
	return tgt, nil
}

// targets keeps the targets that calls resolved, by what they were
// resolved from: resolving parses and prints the URL again, a tenth of the
// allocations of a warm call. A target is never changed once made.
type targets struct {
	mu sync.RWMutex
	m  map[targetKey]*target
}

// targetKey is everything resolveTarget reads.
type targetKey struct {
	entryURL, url, bearer, headers, accessToken string
}

// maxTargets bounds targets; past it they are all dropped (a token that
// changes each hour leaves its old key behind).
const maxTargets = 1024

// resolve is resolveTarget, remembered; a problem is not remembered.
func (ts *targets) resolve(entry *catalog.Entry, config map[string]string, accessToken string) (*target, error) {
	key := targetKey{url: config["url"], bearer: config["bearer_token"], headers: config["headers"], accessToken: accessToken}
	if entry != nil {
		key.entryURL = entry.MCPURL
	}
	ts.mu.RLock()
	tgt := ts.m[key]
	ts.mu.RUnlock()
	if tgt != nil {
		return tgt, nil
	}
	tgt, err := resolveTarget(entry, config, accessToken)
	if err != nil {
		return nil, err
	}
	ts.mu.Lock()
	if ts.m == nil || len(ts.m) >= maxTargets {
		ts.m = make(map[targetKey]*target)
	}
	ts.m[key] = tgt
	ts.mu.Unlock()
	return tgt, nil
}
