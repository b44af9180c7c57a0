package mcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// HandWritten is an MCP server written byte by byte, for answers the SDK's
// server never gives: a stateful server with one tool, "act" (no
// annotations: not retryable), whose every tools/call is answered by
// Answer(id), id being the request's ID as sent. When Ask is set, it first
// asks the client that method on the call's stream, waits for the reply,
// and answers with the reply (as JSON text).
type HandWritten struct {
	Answer func(id string) (contentType, body string)
	Ask    string
	URL    string

	mu      sync.Mutex
	calls   int
	replies chan string
}

// StartHandWritten serves s until the test ends and sets s.URL.
func StartHandWritten(t testing.TB, s *HandWritten) *HandWritten {
	t.Helper()
	s.replies = make(chan string, 1)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Calls is how many tools/call requests s has received.
func (s *HandWritten) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *HandWritten) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	_ = json.Unmarshal(b, &m)
	w.Header().Set("Mcp-Session-Id", "s-1")
	switch {
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"hand","version":"1"}}}`,
			m.ID, m.Params.ProtocolVersion)
	case m.Method == "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"act","inputSchema":{"type":"object"}}]}}`, m.ID)
	case m.Method == "tools/call":
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		if s.Ask != "" {
			s.ask(w, string(m.ID))
			return
		}
		ct, body := s.Answer(string(m.ID))
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, body)
	case len(m.ID) == 0 || m.Method == "": // a notification, or the client's reply
		if m.Method == "" {
			s.replies <- string(b)
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID)
	}
}

// ask sends s.Ask on the call's stream and answers call id with the reply.
func (s *HandWritten) ask(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"ask-1\",\"method\":%q}\n\n", s.Ask)
	w.(http.Flusher).Flush()
	var got string
	select {
	case got = <-s.replies:
	case <-time.After(5 * time.Second):
	}
	text, _ := json.Marshal(got)
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%s}]}}\n\n", id, text)
}
