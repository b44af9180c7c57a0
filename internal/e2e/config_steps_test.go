package e2e

// Black-box tests of the configuration steps' answer rules (API.md,
// "Connected tools"; DESIGN, "Configuration as a state machine"): an answer
// is validated against the current step, including the rules that tie one
// field to another, and a refused answer is a 422 naming each bad field that
// leaves the tool where it was.

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestConfigSteps(t *testing.T) {
	for _, b := range fdBackends {
		t.Run(b.name, func(t *testing.T) {
			c := fdStart(t, b.opts)
			t.Run("http-request auth rules", func(t *testing.T) { csTestAuthRules(t, c.with(t)) })
			t.Run("accepted auth reaches the server", func(t *testing.T) { csTestAuthWorks(t, c.with(t)) })
			t.Run("re-sent step", func(t *testing.T) { csTestResentStep(t, c.with(t)) })
		})
	}
}

// csAtAuth connects an http-request tool and answers its first step.
func csAtAuth(t *testing.T, c *fdClient, baseURL string) (provide, get string) {
	t.Helper()
	id := c.createTool("http-request")
	provide = fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get = fdPath("/api/v1/agents/custom-tools/%d/", id)
	m := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": baseURL}})
	if s, _ := m["next_configuration_step"].(map[string]any); s == nil || s["step"] != "auth" {
		t.Fatalf("after step 1: %v", m)
	}
	return provide, get
}

func csTestAuthRules(t *testing.T, c *fdClient) {
	provide, get := csAtAuth(t, c, "https://api.example.com")
	before := c.do("GET", get, nil).Body

	for _, tc := range []struct {
		name   string
		answer map[string]any
		fields []string
	}{
		{"bearer without a token", map[string]any{"auth_type": "bearer"}, []string{"token"}},
		{"bearer with a blank token", map[string]any{"auth_type": "bearer", "token": "  "}, []string{"token"}},
		{"header without a token or name", map[string]any{"auth_type": "header"}, []string{"token", "header_name"}},
		{"header without a name", map[string]any{"auth_type": "header", "token": "t"}, []string{"header_name"}},
		{"header with a blank name", map[string]any{"auth_type": "header", "token": "t", "header_name": ""}, []string{"header_name"}},
		{"header with an invalid name", map[string]any{"auth_type": "header", "token": "t", "header_name": "X Key:"}, []string{"header_name"}},
		{"header with a hop-by-hop name", map[string]any{"auth_type": "header", "token": "t", "header_name": "Connection"}, []string{"header_name"}},
		{"header with a reserved name", map[string]any{"auth_type": "header", "token": "t", "header_name": "content-length"}, []string{"header_name"}},
		{"none with a token", map[string]any{"auth_type": "none", "token": "t"}, []string{"token"}},
		{"a token alone (auth_type defaults to none)", map[string]any{"token": "t"}, []string{"token"}},
		{"bearer with a header name", map[string]any{"auth_type": "bearer", "token": "t", "header_name": "X-Key"}, []string{"header_name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": tc.answer}), "validation_error", tc.fields...)
			for _, name := range tc.fields {
				if msg := f[name].(string); !strings.Contains(msg, "auth_type") && name != "header_name" {
					t.Errorf("%s: message %q does not say which auth_type it depends on", name, msg)
				}
			}
			if now := c.do("GET", get, nil).Body; !bytes.Equal(now, before) {
				t.Fatalf("a refused answer changed the tool:\n%s\n%s", before, now)
			}
		})
	}

	// Blank optional inputs, as a form sends them, are no answer at all.
	m := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "none", "token": "", "header_name": ""}})
	cfg, _ := m["config"].(map[string]any)
	if m["is_configured"] != true || cfg["auth_type"] != "none" {
		t.Fatalf("auth none: %v", m)
	}
	for _, k := range []string{"token", "header_name"} {
		if _, ok := cfg[k]; ok {
			t.Errorf("auth none stored %s: %v", k, cfg)
		}
	}
}

// csTestAuthWorks configures bearer and header authentication and checks
// that a call carries the credentials.
func csTestAuthWorks(t *testing.T, c *fdClient) {
	var mu sync.Mutex
	seen := map[string]http.Header{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(upstream.Close)

	for _, tc := range []struct {
		path, header, want string
		answer             map[string]any
	}{
		{"/bearer", "Authorization", "Bearer tok-b", map[string]any{"auth_type": "bearer", "token": "tok-b"}},
		{"/header", "X-Api-Key", "tok-h", map[string]any{"auth_type": "header", "token": "tok-h", "header_name": "X-Api-Key"}},
	} {
		provide, get := csAtAuth(t, c, upstream.URL)
		m := c.ok(200, "POST", provide, map[string]any{"user_response": tc.answer})
		if m["is_configured"] != true {
			t.Fatalf("%s: %v", tc.path, m)
		}
		id := fdInt(t, c.ok(200, "GET", get, nil)["id"])
		r := c.ok(200, "POST", "/api/v1/agents/custom-tools/call/",
			map[string]any{"tool": id, "action": "get", "arguments": map[string]any{"path": tc.path}})
		if r["is_error"] != false {
			t.Fatalf("%s: call %v", tc.path, r)
		}
		mu.Lock()
		got := seen[tc.path].Get(tc.header)
		mu.Unlock()
		if got != tc.want {
			t.Errorf("%s: upstream saw %s %q, want %q", tc.path, tc.header, got, tc.want)
		}
	}
}

func csTestResentStep(t *testing.T, c *fdClient) {
	step1 := map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com"}}
	provide, get := csAtAuth(t, c, "https://api.example.com")
	before := c.do("GET", get, nil).Body

	// A client retrying step 1 after a lost response must not complete step
	// 2 with its defaults.
	m := fdWantError(t, c.do("POST", provide, step1), 422, "validation_error")
	f := fdFields(t, m)
	msg, _ := f["base_url"].(string)
	if len(f) != 1 || !strings.Contains(msg, "step 2 (auth)") || !strings.Contains(msg, "step 2 of 2") {
		t.Errorf("re-sent step 1: fields %v, want base_url saying the tool is at step 2 (auth) of 2", f)
	}
	// With a valid answer to step 2 beside it, the stale answer still names it.
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{
		"base_url": "https://other.example.com", "auth_type": "none"}}), "validation_error", "base_url")
	if now := c.do("GET", get, nil).Body; !bytes.Equal(now, before) {
		t.Fatalf("a refused answer changed the tool:\n%s\n%s", before, now)
	}

	// An empty answer to a step whose fields all have defaults or conditions
	// accepts the defaults.
	done := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{}})
	cfg, _ := done["config"].(map[string]any)
	if done["is_configured"] != true || cfg["auth_type"] != "none" || cfg["base_url"] != "https://api.example.com" {
		t.Fatalf("empty answer to step 2: %v", done)
	}
	// Once configured, a retry of the last step is refused as API.md's
	// table has it (422, unchanged), naming user_response.
	again := c.fail(422, "validation_error", "POST", provide, map[string]any{"user_response": map[string]any{}})
	if f, _ := again["fields"].(map[string]any); f["user_response"] == nil {
		t.Fatalf("a configured tool's refusal names no field: %v", again)
	}
}

// TestRequiredWhenShown: a field's condition is part of the step a client
// renders, in the catalog entry and in a connected tool's next step.
func TestRequiredWhenShown(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	want := map[string]string{"token": "[bearer header]", "header_name": "[header]"}
	check := func(what string, fields []any) {
		t.Helper()
		seen := 0
		for _, f := range fields {
			m := f.(map[string]any)
			if w, ok := want[m["name"].(string)]; ok {
				seen++
				if rw, _ := m["required_when"].(map[string]any); fmt.Sprint(rw["auth_type"]) != w {
					t.Errorf("%s: %s required_when = %v, want auth_type %s", what, m["name"], m["required_when"], w)
				}
			}
		}
		if seen != len(want) {
			t.Errorf("%s: %d of the conditional fields found in %v", what, seen, fields)
		}
	}
	r := srv.Do("GET", "/api/v1/agents/tools/available/http-request/", nil)
	steps, _ := r.JSON()["config_steps"].([]any)
	if r.Status != 200 || len(steps) != 2 {
		t.Fatalf("catalog entry: %d %s", r.Status, r.Body)
	}
	check("catalog", steps[1].(map[string]any)["fields"].([]any))

	r = srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"base_url": "http://127.0.0.1:9"}})
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if r.Status != 200 || next == nil {
		t.Fatalf("step 1: %d %s", r.Status, r.Body)
	}
	check("next step", next["fields"].([]any))
}
