package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Wrappers for Options.Wrap that change what a server answers on the wire,
// for answers the SDK's server does not give on its own.

// peek reads the JSON-RPC method and ID of a POST and gives r its body back.
func peek(r *http.Request) (method string, id json.RawMessage) {
	if r.Method != http.MethodPost || r.Body == nil {
		return "", nil
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method, m.ID
}

// SessionReplacer makes a server name, in its answers, a session other than
// the one the request carried, as a server (or a gateway in front of it)
// that replaced the session does; the server goes on serving the old one.
type SessionReplacer struct {
	// Method is the request whose answer replaces the session; empty
	// means tools/call.
	Method string
	// EveryCall names a fresh session in the answer to every such request
	// that carries one, as a gateway that issues a session per call does.
	EveryCall bool

	mu       sync.Mutex
	armed    bool
	replaced map[string]string // the request's session → the one answers name
	issued   int
}

// Replace arms r: the session of the next request of r's Method is
// replaced, and the answer to it and to every later request of that session
// names the new one.
func (r *SessionReplacer) Replace() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = true
}

// Issued returns how many sessions r named in place of another.
func (r *SessionReplacer) Issued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.issued
}

// Wrap is the wrapper, for Options.Wrap.
func (r *SessionReplacer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		method, _ := peek(req)
		want := r.Method
		if want == "" {
			want = "tools/call"
		}
		if sent := req.Header.Get("Mcp-Session-Id"); sent != "" {
			r.mu.Lock()
			named, ok := r.replaced[sent]
			if !ok && method == want && (r.armed || r.EveryCall) {
				r.armed = false
				r.issued++
				named = fmt.Sprintf("%s-replaced-%d", sent, r.issued)
				if !r.EveryCall {
					if r.replaced == nil {
						r.replaced = map[string]string{}
					}
					r.replaced[sent] = named
				}
			}
			r.mu.Unlock()
			if named != "" {
				w.Header().Set("Mcp-Session-Id", named)
			}
		}
		next.ServeHTTP(w, req)
	})
}

// NotFoundCalls answers tools/call with HTTP 404.
type NotFoundCalls struct {
	// Body is the 404's body; "{id}" in it stands for the request's
	// JSON-RPC ID as sent. Empty means "session not found" in plain text,
	// as the Go SDK's server answers a session it does not know.
	Body string
	// AfterActing runs the call first (the tool acts) and answers 404 in
	// place of its answer, as a server that gives a tool's own errors HTTP
	// statuses may; otherwise the call is refused before it runs.
	AfterActing bool
	// Times is how many calls are answered so (the first ones); 0 means
	// every call.
	Times int

	mu       sync.Mutex
	answered int
}

// Wrap is the wrapper, for Options.Wrap.
func (n *NotFoundCalls) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		method, id := peek(req)
		n.mu.Lock()
		refuse := method == "tools/call" && (n.Times == 0 || n.answered < n.Times)
		if refuse {
			n.answered++
		}
		n.mu.Unlock()
		if !refuse {
			next.ServeHTTP(w, req)
			return
		}
		if n.AfterActing {
			next.ServeHTTP(httptest.NewRecorder(), req) // the answer never leaves
		}
		if n.Body == "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, strings.ReplaceAll(n.Body, "{id}", string(id)))
	})
}
