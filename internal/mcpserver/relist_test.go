package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// TestMCPRelistsUnlistedAction: a tools/call of an action the agent does
// not list, of a tool it lists, asks the tool's connector to re-list; when
// the new list names it, the agent's list is built anew (once, however many
// ask) and the call runs as a listed one, on both paths and under every
// protocol. Any other name stays unknown without a build.
func TestMCPRelistsUnlistedAction(t *testing.T) {
	f, _ := setup(t)
	f.shared = true
	serve := func(sdkOnly bool) string {
		_, u := serveAgent7(t, Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Hour}, sdkOnly)
		return u
	}
	fastURL, sdkURL := serve(false), serve(true)
	counts := func() (gets, relists int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.agentGets, f.relists
	}
	for _, u := range []string{fastURL, sdkURL} { // warm both lists
		if a := post(t, f, u, nil, toolsCall("My_Mail__read", `{}`)); len(a.engineBodies) != 1 {
			t.Fatalf("warming %s: %d %s", u, a.status, a.body)
		}
	}

	// Names no re-list can add: no tool part, a tool the agent does not
	// list, an action the re-list does not have. Only the last asks.
	gets, relists := counts()
	for _, name := range []string{"fresh", "Other__fresh", "My_Mail__fresh"} {
		for _, u := range []string{fastURL, sdkURL} {
			if a := post(t, f, u, nil, toolsCall(name, `{}`)); !strings.Contains(a.body, `unknown tool \"`+name+`\"`) || len(a.engineBodies) != 0 {
				t.Errorf("%s: %d %s, want unknown tool", name, a.status, a.body)
			}
		}
	}
	if g, r := counts(); g != gets || r != relists+2 {
		t.Errorf("unknown names: %d agent reads, %d re-lists; want 0 and 2", g-gets, r-relists)
	}

	// The server adds a non-retryable action: the connector's list is a
	// new one.
	base := f.actions
	fresh := append(slices.Clone(base), connectors.Action{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)})
	setList := func(actions []connectors.Action) {
		f.mu.Lock()
		f.actions = actions
		f.relist = func() ([]connectors.Action, error) { return actions, nil }
		f.requests = nil
		f.mu.Unlock()
	}
	setList(fresh)

	gets, _ = counts()
	const callers = 8
	var wg sync.WaitGroup
	bodies := make([]string, callers)
	for i := range callers {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", fastURL, strings.NewReader(toolsCall("My_Mail__fresh", `{"idempotency_key":"k-fresh"}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies[i] = string(b)
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if !strings.Contains(b, `"quiver/call_id":"c_1"`) {
			t.Errorf("caller %d: %s", i, b)
		}
	}
	f.mu.Lock()
	for _, r := range f.requests {
		if string(r.Body) != `{"tool":11,"action":"fresh","arguments":{}}` || r.Key != "k-fresh" {
			t.Errorf("the engine got %s with key %q", r.Body, r.Key)
		}
	}
	if len(f.requests) != callers {
		t.Errorf("the engine got %d calls, want %d", len(f.requests), callers)
	}
	f.mu.Unlock()
	if g, _ := counts(); g != gets+1 {
		t.Errorf("%d concurrent callers made %d builds, want 1", callers, g-gets)
	}
	// The list shows it now, with its key argument.
	if a := post(t, f, fastURL, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(a.body, `"My_Mail__fresh"`) ||
		!strings.Contains(a.body, `"required":["idempotency_key"]`) {
		t.Errorf("tools/list after the re-list: %s", a.body)
	}

	// On the SDK's path, under every protocol, the answer is the one the
	// same call of the name listed gets, the key taken out alike.
	for _, version := range []string{"", "2025-06-18", protocolStateless} {
		setList(base)
		u := serve(true)
		post(t, f, u, nil, toolsCall("My_Mail__read", `{}`))
		setList(slices.Clone(fresh))
		h, meta := map[string]string{headerProtocol: version}, ""
		if version == protocolStateless {
			h, meta = withName(newHeaders, "My_Mail__fresh"), ","+newMeta
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__fresh","arguments":{"idempotency_key":"k"}` + meta + `}}`
		relisted, listed := post(t, f, u, h, body), post(t, f, u, h, body)
		if relisted.status != listed.status || relisted.body != listed.body || !slices.Equal(relisted.engineKeys, []string{"k"}) ||
			!slices.Equal(listed.engineKeys, []string{"k"}) {
			t.Errorf("protocol %q: re-listed %d %s %v, listed %d %s %v", version, relisted.status, relisted.body, relisted.engineKeys,
				listed.status, listed.body, listed.engineKeys)
		}
	}

	// A re-list that gives the list the agent's was built from builds
	// nothing.
	gets, _ = counts()
	if a := post(t, f, fastURL, nil, toolsCall("My_Mail__never", `{}`)); !strings.Contains(a.body, "unknown tool") {
		t.Errorf("never: %s", a.body)
	}
	if g, _ := counts(); g != gets {
		t.Errorf("a re-list of the same list made %d builds", g-gets)
	}
}
