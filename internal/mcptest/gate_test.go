package mcptest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	listTools = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	callRead  = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_count","arguments":{}}}`
	callIncr  = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"increment","arguments":{}}}`
)

// body reads a response's body whole.
func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rpcAnswer returns the JSON-RPC response in a JSON or event-stream body.
func rpcAnswer(t *testing.T, text string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["id"] != nil && m["method"] == nil {
			return m
		}
	}
	t.Fatalf("no JSON-RPC answer in %q", text)
	return nil
}

func TestRefuseStatus(t *testing.T) {
	t.Parallel()
	s := Start(t, Inbox, Options{RefuseStatus: http.StatusForbidden})
	resp := post(t, s.URL, initialize, map[string]string{"Authorization": "Bearer wrong"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status = %d, want 403", resp.StatusCode)
	}
	var m map[string]string
	if json.NewDecoder(resp.Body).Decode(&m) != nil || !strings.Contains(m["message"], "doesn't check out") {
		t.Errorf("403 body = %v", m)
	}
	if s.Initializes() != 0 {
		t.Errorf("initializes = %d, want 0", s.Initializes())
	}
}

func TestDropToolQuietly(t *testing.T) {
	t.Parallel()
	s := Start(t, Counter, Options{Stateless: true, JSONResponse: true, PageSize: 100})
	s.DropTool("increment")

	list := rpcAnswer(t, body(t, post(t, s.URL, listTools, nil)))
	tools, _ := list["result"].(map[string]any)["tools"].([]any)
	if len(tools) != CounterTools-1 {
		t.Fatalf("%d tools listed, want %d", len(tools), CounterTools-1)
	}
	for _, tool := range tools {
		if tool.(map[string]any)["name"] == "increment" {
			t.Fatal("a dropped tool is still listed")
		}
	}
	answer := rpcAnswer(t, body(t, post(t, s.URL, callIncr, nil)))
	rpcErr, _ := answer["error"].(map[string]any)
	if rpcErr["code"] != float64(-32602) || !strings.Contains(rpcErr["message"].(string), `unknown tool "increment"`) {
		t.Fatalf("call of a dropped tool: %v", answer)
	}
	if n := s.Calls("increment"); n != 0 {
		t.Fatalf("a dropped tool ran %d times", n)
	}

	s.RestoreTool("increment")
	if answer := rpcAnswer(t, body(t, post(t, s.URL, callIncr, nil))); answer["result"] == nil {
		t.Fatalf("call of a restored tool: %v", answer)
	}
	if n := s.Calls("increment"); n != 1 {
		t.Fatalf("a restored tool ran %d times, want 1", n)
	}
}

func TestAnnounceOnNextCall(t *testing.T) {
	t.Parallel()
	s := Start(t, Counter, Options{Stateless: true})
	plain := body(t, post(t, s.URL, callRead, nil))
	if strings.Contains(plain, "list_changed") {
		t.Fatalf("a notice without AnnounceOnNextCall: %s", plain)
	}

	s.AnnounceOnNextCall()
	text := body(t, post(t, s.URL, callRead, nil))
	notice := strings.Index(text, `"method":"notifications/tools/list_changed"`)
	result := strings.Index(text, `"result"`)
	if notice < 0 || result < 0 || notice > result {
		t.Fatalf("want the notice before the result on the call's stream: %s", text)
	}
	if again := body(t, post(t, s.URL, callRead, nil)); strings.Contains(again, "list_changed") {
		t.Fatalf("the notice came twice: %s", again)
	}
}
