package e2e

// Black-box tests of answers that are no field of the current step. One
// meant for a field (a misspelling of one of the step's, or a field of an
// earlier or later step) is refused by name (API.md: "422 on provide-config
// carries fields naming each bad field; the tool stays at the same step"),
// never dropped; one under a name that means nothing here is an unknown
// field, ignored as API.md ignores unknown fields.

import (
	"bytes"
	"strings"
	"testing"
)

func TestConfigStrayAnswers(t *testing.T) {
	for _, b := range fdBackends {
		t.Run(b.name, func(t *testing.T) {
			c := fdStart(t, b.opts)
			t.Run("misspelled at step 2", func(t *testing.T) { csTestMisspelled(t, c.with(t)) })
			t.Run("later step's fields at step 1", func(t *testing.T) { csTestEarlyAnswers(t, c.with(t)) })
			t.Run("custom-mcp and tavily", func(t *testing.T) { csTestStrayOneStep(t, c.with(t)) })
		})
	}
}

// csWantStray posts answer, wants a 422 naming exactly fields, each message
// holding its word, and the tool unchanged.
func csWantStray(t *testing.T, c *fdClient, provide, get string, answer map[string]any, want map[string]string) {
	t.Helper()
	before := c.do("GET", get, nil).Body
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	f := fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": answer}), "validation_error", names...)
	for n, word := range want {
		if msg := f[n].(string); !strings.Contains(msg, word) {
			t.Errorf("%s: message %q does not say %q", n, msg, word)
		}
	}
	if now := c.do("GET", get, nil).Body; !bytes.Equal(now, before) {
		t.Fatalf("a refused answer changed the tool:\n%s\n%s", before, now)
	}
}

func csTestMisspelled(t *testing.T, c *fdClient) {
	provide, get := csAtAuth(t, c, "https://api.example.com")
	// The probe's case: answered 200, auth_type none, the token dropped.
	csWantStray(t, c, provide, get, map[string]any{"authType": "bearer", "Token": "s3cret"},
		map[string]string{"authType": `"auth_type"`, "Token": `"token"`})
	csWantStray(t, c, provide, get, map[string]any{"auth_type": "bearer", "token": "s3cret", "header_nme": "X-Key"},
		map[string]string{"header_nme": "auth_type, token, header_name"})
	// A blank value under a misspelled name is still refused: the name is
	// the mistake.
	csWantStray(t, c, provide, get, map[string]any{"auth_type": "none", "tokn": ""},
		map[string]string{"tokn": `"token"`})
	// A name near no field is an unknown field: not named beside a bad
	// known field, and ignored beside good ones.
	csWantStray(t, c, provide, get, map[string]any{"auth_type": "magic", "_client_note": 1},
		map[string]string{"auth_type": "none, bearer, header"})
	m := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "bearer", "token": "s3cret", "_client_note": 1}})
	if cfg, _ := m["config"].(map[string]any); m["is_configured"] != true || cfg["auth_type"] != "bearer" || cfg["_client_note"] != nil {
		t.Fatalf("the corrected answer: %v", m)
	}
}

func csTestEarlyAnswers(t *testing.T, c *fdClient) {
	id := c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get := fdPath("/api/v1/agents/custom-tools/%d/", id)
	// The probe's case: step 1 accepted, the step-2 answers dropped.
	csWantStray(t, c, provide, get, map[string]any{"base_url": "https://api.example.com", "auth_type": "bearer", "token": "s3cret"},
		map[string]string{"auth_type": "step 2 (auth)", "token": "step 2 (auth)"})
	csWantStray(t, c, provide, get, map[string]any{"auth_type": "none"},
		map[string]string{"base_url": "is required", "auth_type": "step 2 (auth)"})
	csWantStray(t, c, provide, get, map[string]any{"base_url": "https://api.example.com", "BASE_URL": "x"},
		map[string]string{"BASE_URL": `"base_url"`})
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com"}})
}

func csTestStrayOneStep(t *testing.T, c *fdClient) {
	mcp := c.createTool("custom-mcp")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", mcp)
	get := fdPath("/api/v1/agents/custom-tools/%d/", mcp)
	// Refused before Quiver connects: the URL is never dialled.
	csWantStray(t, c, provide, get, map[string]any{"url": "http://127.0.0.1:1/mcp", "bearerToken": "t"},
		map[string]string{"bearerToken": `"bearer_token"`})
	csWantStray(t, c, provide, get, map[string]any{"url": "http://127.0.0.1:1/mcp", "header": map[string]string{"X-A": "b"}},
		map[string]string{"header": `"headers"`})

	tav := c.createTool("tavily")
	provide = fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tav)
	get = fdPath("/api/v1/agents/custom-tools/%d/", tav)
	csWantStray(t, c, provide, get, map[string]any{"tavily_api_key": "tvly-x"},
		map[string]string{"tavily_api_key": `"TAVILY_API_KEY"`, "TAVILY_API_KEY": "is required"})
	// The seed's example answer still configures it.
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-***"}})
}
