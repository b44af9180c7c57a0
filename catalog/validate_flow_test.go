package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

// TestParseRefusesWhatTheFlowIgnores holds refusals of entries that load
// but would not behave as they read: a value the configuration or OAuth
// flow never applies, or overrides, is a mistake `quiver catalog check`
// must name rather than leave to the first user.
func TestParseRefusesWhatTheFlowIgnores(t *testing.T) {
	r := strings.Replace
	field := func(old, new string) map[string]string {
		return map[string]string{"demo.yaml": r(validBuiltin, old, new, 1)}
	}
	const key = `{name: API_KEY, label: Key, type: string, required: true, secret: true, pattern: "^d-"}`
	oauthWith := func(extra string) map[string]string {
		return map[string]string{"hosted.yaml": r(validOAuth, "  pkce: true\n", "  pkce: true\n"+extra, 1)}
	}
	// other is a second hosted entry of provider example.
	other := r(r(validOAuth, "name: hosted", "name: other", 1), "mcp.example.com", "mcp2.example.com", 1)
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"pattern on an object field", field(key, `{name: headers, label: Headers, type: object, secret: true, pattern: "^x"}`),
			"demo.yaml: steps[0].fields[0].pattern: a pattern applies to string, url and enum fields"},
		{"pattern on a boolean field", field(key, `{name: flag, label: Flag, type: boolean, pattern: "^t"}`),
			"demo.yaml: steps[0].fields[0].pattern"},
		{"pattern on an integer field", field(key, `{name: count, label: Count, type: integer, pattern: "^1"}`),
			"demo.yaml: steps[0].fields[0].pattern"},
		{"default not matching the pattern", field(key, `{name: region, label: Region, type: string, pattern: "^eu-", default: us-east-1}`),
			"demo.yaml: steps[0].fields[0].default: \"us-east-1\" does not match the pattern"},
		{"default not a URL", field(key, `{name: base, label: Base, type: url, default: "example.com"}`),
			"demo.yaml: steps[0].fields[0].default: \"example.com\" is not an http:// or https:// URL"},
		{"default not a boolean", field(key, `{name: flag, label: Flag, type: boolean, default: "yes"}`),
			"demo.yaml: steps[0].fields[0].default: \"yes\" is not true or false"},
		{"default not an integer", field(key, `{name: count, label: Count, type: integer, default: "1.5"}`),
			"demo.yaml: steps[0].fields[0].default: \"1.5\" is not an integer"},
		{"default on an object field", field(key, `{name: extra, label: Extra, type: object, default: "{}"}`),
			"demo.yaml: steps[0].fields[0].default: an object field has no default"},
		{"default on a secret field", field(key, `{name: API_KEY, label: Key, type: string, secret: true, default: d-shared}`),
			"demo.yaml: steps[0].fields[0].default: a secret field has no default"},
		{"pkce off", map[string]string{"hosted.yaml": r(validOAuth, "pkce: true", "pkce: false", 1)},
			"hosted.yaml: oauth.pkce: Quiver always uses PKCE"},
		{"extra param overriding state", oauthWith("  extra_auth_params: {state: fixed}\n"),
			"hosted.yaml: oauth.extra_auth_params.state: is set by the authorization flow"},
		{"extra param overriding the PKCE challenge", oauthWith("  extra_auth_params: {code_challenge_method: plain}\n"),
			"hosted.yaml: oauth.extra_auth_params.code_challenge_method"},
		{"extra param overriding the redirect", oauthWith("  extra_auth_params: {redirect_uri: \"https://evil.example/cb\"}\n"),
			"hosted.yaml: oauth.extra_auth_params.redirect_uri"},
		{"extra param overriding the scopes", oauthWith("  extra_auth_params: {scope: \"read,write\"}\n"),
			"hosted.yaml: oauth.extra_auth_params.scope: is set by the authorization flow from scopes"},
		{"one provider, two token endpoints", map[string]string{"hosted.yaml": validOAuth,
			"other.yaml": r(other, "https://example.com/oauth/token", "https://example.com/oauth2/token", 1)},
			"other.yaml: oauth.token_url: provider \"example\" has token_url \"https://example.com/oauth/token\" in hosted.yaml"},
		{"one provider, two authorization endpoints", map[string]string{"hosted.yaml": validOAuth,
			"other.yaml": r(other, "https://example.com/oauth/authorize", "https://login.example.com/authorize", 1)},
			"other.yaml: oauth.authorization_url: provider \"example\""},
		{"verify on an oauth step", map[string]string{"hosted.yaml": r(validOAuth, "description: Sign in.}", "description: Sign in., verify: true}", 1)},
			"hosted.yaml: steps[0].verify: only a form step is verified"},
		{"custom mcp without a url field", map[string]string{"custom.yaml": r(validCustom, "name: url,", "name: endpoint,", 1)},
			"custom.yaml: steps[0].fields: a custom_mcp tool's first step asks for the server's url"},
		{"custom mcp url not a url field", map[string]string{"custom.yaml": r(validCustom, "type: url", "type: string", 1)},
			"custom.yaml: steps[0].fields[0].type: the url of a custom_mcp tool is a url field"},
		{"custom mcp url optional", map[string]string{"custom.yaml": r(validCustom, "required: true", "required: false", 1)},
			"custom.yaml: steps[0].fields[0].required: the url of a custom_mcp tool is required"},
		{"custom mcp first step oauth", map[string]string{"custom.yaml": r(validCustom, "steps:\n", "steps:\n  - {id: oauth, type: oauth, title: Connect, description: Sign in.}\n", 1)},
			"custom.yaml: steps[0].type: a custom_mcp tool's first step is the form"},
		{"step without description", map[string]string{"hosted.yaml": r(validOAuth, ", description: Sign in.}", "}", 1)},
			"hosted.yaml: steps[0].description: is required"},
		{"category outside the catalog's", map[string]string{"demo.yaml": r(validBuiltin, "categories: [search]", "categories: [search, developers]", 1)},
			"demo.yaml: categories[1]: \"developers\" is not one of the catalog's categories"},
		{"one provider, two token auth methods", map[string]string{"hosted.yaml": validOAuth,
			"other.yaml": r(other, "  pkce: true\n", "  pkce: true\n  token_auth: client_secret_basic\n", 1)},
			"other.yaml: oauth.token_auth: provider \"example\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := mapFS(tc.files)
			c, err := catalog.Parse(fsys)
			if err == nil {
				t.Fatalf("Parse accepted the catalog: %v", c.List(""))
			}
			var problems catalog.Problems
			if !errors.As(err, &problems) || len(problems) == 0 {
				t.Fatalf("error %T is not Problems: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
			if got := catalog.Check(fsys); len(got) != len(problems) {
				t.Errorf("Check found %d problems, Parse %d", len(got), len(problems))
			}
		})
	}
}

// validCustom is a custom MCP entry: its first step asks for the URL.
const validCustom = `name: custom
type: custom_mcp
title: Custom
description: Any MCP server.
categories: [developer]
auth: none
connector: mcp
steps:
  - id: server
    type: form
    title: Server
    description: Where the server is.
    verify: true
    fields:
      - {name: url, label: URL, type: url, required: true}
      - {name: bearer_token, label: Token, type: string, secret: true}
`

// TestParseAcceptsWhatTheFlowApplies: the neighbours of those refusals
// load: defaults the form would accept, a provider's own extra
// parameters, and two entries of one provider that agree on its endpoints.
func TestParseAcceptsWhatTheFlowApplies(t *testing.T) {
	r := strings.Replace
	const key = `{name: API_KEY, label: Key, type: string, required: true, secret: true, pattern: "^d-"}`
	builtin := r(validBuiltin, key, key+`
      - {name: region, label: Region, type: string, pattern: "^eu-", default: eu-west-1}
      - {name: base, label: Base, type: url, default: "https://api.example.com"}
      - {name: flag, label: Flag, type: boolean, default: "true"}
      - {name: count, label: Count, type: integer, default: "-3"}
      - {name: mode, label: Mode, type: enum, options: [a, b], pattern: "^[ab]$", default: a}`, 1)
	hosted := r(validOAuth, "  pkce: true\n", "  pkce: true\n  extra_auth_params: {access_type: offline, prompt: consent}\n", 1)
	other := r(r(validOAuth, "name: hosted", "name: other", 1), "scopes: [read]", "scopes: [write]", 1)
	if _, err := catalog.Parse(mapFS(map[string]string{"demo.yaml": builtin, "hosted.yaml": hosted, "other.yaml": other, "custom.yaml": validCustom})); err != nil {
		t.Fatal(err)
	}
}
