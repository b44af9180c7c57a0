package mcptest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestInboxRefusesBadKeyFirst(t *testing.T) {
	t.Parallel()
	s := Start(t, Inbox, Options{})
	resp := post(t, s.URL, initialize, map[string]string{"X-Api-Key": "wrong"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", resp.StatusCode)
	}
	var body map[string]string
	if json.NewDecoder(resp.Body).Decode(&body) != nil || body["message"] == "" {
		t.Errorf("401 body = %v", body)
	}
	if s.Initializes() != 0 || s.Requests() != 1 {
		t.Errorf("initializes = %d, requests = %d", s.Initializes(), s.Requests())
	}
	if resp := post(t, s.URL, initialize, map[string]string{"Authorization": "Bearer " + InboxKey}); resp.StatusCode != http.StatusOK {
		t.Errorf("good key: status = %d", resp.StatusCode)
	}
	if s.Initializes() != 1 {
		t.Errorf("initializes = %d, want 1", s.Initializes())
	}
}

func TestResourceMetadataChallenge(t *testing.T) {
	t.Parallel()
	s := Start(t, Mail, Options{RequireBearer: "x", ResourceMetadata: "https://m.example/.well-known/oauth-protected-resource"})
	resp := post(t, s.URL, initialize, nil)
	if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `resource_metadata="https://m.example/`) {
		t.Errorf("WWW-Authenticate = %q", got)
	}
}

func TestDropAfterActCountsAndDrops(t *testing.T) {
	t.Parallel()
	s := Start(t, Counter, Options{Stateless: true})
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"drop_after_act","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("got a response (%d), want a dropped connection", resp.StatusCode)
	}
	if n := s.Calls("drop_after_act"); n != 1 {
		t.Errorf("drop_after_act counted %d, want 1", n)
	}
}
