package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

func TestMCPNamesAction(t *testing.T) {
	long := strings.Repeat("l", 140)
	names := actionNames("t", []connectors.Action{{Name: "a/b"}, {Name: "a_b"}, {Name: long}, {Name: long + "x"}, {Name: "send"}})
	for i, a := range []string{"a/b", "a_b", long, long + "x", "send"} {
		if !namesAction(names[i], a) {
			t.Errorf("namesAction(%q, %q) = false", names[i], a)
		}
		if len(a) < 100 && !namesAction("other_7"+strings.TrimPrefix(names[i], "t"), a) {
			t.Errorf("under another tool name, %q does not name %q", names[i], a)
		}
	}
	for _, c := range []struct{ name, action string }{
		{"t__send", "sen"}, {"t__sendx", "send"}, {"send", "send"}, {"__send", "send"}, {"t__read", "send"},
		{"t__send" + hashSuffix("send") + "_02", "send"}, {"t__send_2", "send"},
	} {
		if namesAction(c.name, c.action) {
			t.Errorf("namesAction(%q, %q) = true", c.name, c.action)
		}
	}
	if !namesAction("t__send"+hashSuffix("send")+"_3", "send") {
		t.Error("a further _3 is refused")
	}
}

func TestMCPKeyCandidates(t *testing.T) {
	for args, want := range map[string][]string{
		`{"idempotency_key":"a"}`:                                                             {keyArg},
		`{"idempotency_key":"a","quiver_idempotency_key":"b","x":1}`:                          {altKeyArg, keyArg},
		`{"quiver_idempotency_key_2":"c","idempotency_key":"a","quiver_idempotency_key":"b"}`: {altKeyArg + "_2", altKeyArg, keyArg},
		`{"quiver_idempotency_key_1":"a","quiver_idempotency_key_02":"a","x":1}`:              nil,
		`{"quiver_idempotency_key_10":"a","quiver_idempotency_key_9":"a","quiver_idempotency_key_3":"a","idempotency_key":"a"}`: {
			altKeyArg + "_10", altKeyArg + "_9", altKeyArg + "_3"},
		`[1]`: nil, `"x"`: nil, ``: nil,
	} {
		if got := keyCandidates(json.RawMessage(args)); !slices.Equal(got, want) {
			t.Errorf("keyCandidates(%s) = %v, want %v", args, got, want)
		}
	}
}

// keyedEngine is the fake engine with idempotency keys, per account.
type keyedEngine struct {
	engineFunc
	mu   sync.Mutex
	keys map[string]*calls.KeyState // "account/key"
	err  error
	asks []string
}

func (k *keyedEngine) Key(_ context.Context, account int64, key string) (*calls.KeyState, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asks = append(k.asks, key)
	if k.err != nil {
		return nil, k.err
	}
	if ks := k.keys[strconv.FormatInt(account, 10)+"/"+key]; ks != nil {
		return ks, nil
	}
	return nil, problem.New(problem.NotFound, "No idempotency key with that value for this account.")
}

// TestMCPUnlistedReplays: a tools/call of a name the agent does not list
// whose key argument holds one of the account's keys for that action runs
// the key's call through the engine, on both paths alike; any other stays
// unknown without reaching the engine.
func TestMCPUnlistedReplays(t *testing.T) {
	f, _ := setup(t)
	eng := &keyedEngine{engineFunc: f.CallEngine, keys: map[string]*calls.KeyState{
		"1/k-gone": {Key: "k-gone", Tool: 99, Action: "send"},
		"2/k-else": {Key: "k-else", Tool: 98, Action: "send"},
	}}
	opts := Options{Agents: f, Tools: f, Actions: listing{f}, Calls: eng, ListTTL: time.Minute}
	_, fastURL := serveAgent7(t, opts, false)
	_, sdkURL := serveAgent7(t, opts, true)
	replayed := []string{`{"tool":99,"action":"send","arguments":{"to":"a"}}`}
	for _, c := range []struct {
		label, name, args string
		engine            []string // bodies the engine got; nil: unknown tool
	}{
		{"the key's action", "Gone__send", `{"to":"a","idempotency_key":"k-gone"}`, replayed},
		{"under another tool name", "x_5__send", `{"idempotency_key":"k-gone","to":"a"}`, replayed},
		{"Quiver's other key name", "Gone__send", `{"to":"a","quiver_idempotency_key":"k-gone"}`, replayed},
		{"another action's name", "Gone__read", `{"to":"a","idempotency_key":"k-gone"}`, nil},
		{"no key argument", "Gone__send", `{"to":"a"}`, nil},
		{"an unknown key", "Gone__send", `{"to":"a","idempotency_key":"k-none"}`, nil},
		{"another account's key", "Gone__send", `{"to":"a","idempotency_key":"k-else"}`, nil},
		{"an invalid key", "Gone__send", `{"to":"a","idempotency_key":" k"}`, nil},
		{"no tool part", "send", `{"to":"a","idempotency_key":"k-gone"}`, nil},
	} {
		fast := post(t, f, fastURL, nil, toolsCall(c.name, c.args))
		sdk := post(t, f, sdkURL, nil, toolsCall(c.name, c.args))
		if fast.status != sdk.status || fast.body != sdk.body || !slices.Equal(fast.engineBodies, sdk.engineBodies) {
			t.Errorf("%s: the fast path answered %d %s %v, the SDK %d %s %v", c.label, fast.status, fast.body, fast.engineBodies,
				sdk.status, sdk.body, sdk.engineBodies)
		}
		if !slices.Equal(sdk.engineBodies, c.engine) {
			t.Errorf("%s: the engine got %v, want %v", c.label, sdk.engineBodies, c.engine)
		}
		if c.engine != nil && (!slices.Equal(sdk.engineKeys, []string{"k-gone"}) || !strings.Contains(sdk.body, `"quiver/call_id":"c_1"`)) {
			t.Errorf("%s: keys %v, answer %s", c.label, sdk.engineKeys, sdk.body)
		}
		if c.engine == nil && !strings.Contains(sdk.body, `unknown tool \"`+c.name+`\"`) {
			t.Errorf("%s: answer %s, want unknown tool", c.label, sdk.body)
		}
	}

	// A listed name never asks for its key here.
	eng.mu.Lock()
	eng.asks = nil
	eng.mu.Unlock()
	post(t, f, sdkURL, nil, toolsCall("My_Mail__send", `{"to":"a","idempotency_key":"k-gone"}`))
	if len(eng.asks) != 0 {
		t.Errorf("a listed call looked its key up: %v", eng.asks)
	}

	// The answer is the one a listed tool gets for the same engine answer,
	// under every protocol.
	for _, version := range []string{"", "2025-06-18", protocolStateless} {
		h, meta := map[string]string{headerProtocol: version}, ""
		if version == protocolStateless {
			h, meta = withName(newHeaders, "Gone__send"), ","+newMeta
		}
		body := func(name string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"to":"a","idempotency_key":"k-gone"}` + meta + `}}`
		}
		fast, sdk := post(t, f, fastURL, h, body("Gone__send")), post(t, f, sdkURL, h, body("Gone__send"))
		if version == protocolStateless {
			h = withName(newHeaders, "My_Mail__send")
		}
		listed := post(t, f, fastURL, h, body("My_Mail__send"))
		if fast.body != sdk.body || sdk.body != listed.body || fast.status != listed.status || !slices.Equal(sdk.engineBodies, replayed) {
			t.Errorf("protocol %q: fast %d %s, SDK %s, listed %d %s, engine %v", version, fast.status, fast.body, sdk.body,
				listed.status, listed.body, sdk.engineBodies)
		}
	}

	// When the key cannot be looked up, the call says so.
	eng.mu.Lock()
	eng.err = errors.Join(store.ErrUnavailable)
	eng.mu.Unlock()
	a := post(t, f, sdkURL, nil, toolsCall("Gone__send", `{"to":"a","idempotency_key":"k-gone"}`))
	if !strings.Contains(a.body, `\"error\":\"unavailable\"`) || !strings.Contains(a.body, `"isError":true`) || len(a.engineBodies) != 0 {
		t.Errorf("database down: %s", a.body)
	}
}
