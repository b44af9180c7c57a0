package catalog_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/quiverhq/quiver/catalog"
)

const validBuiltin = `name: demo
type: builtin
title: Demo
description: A demo tool.
categories: [search]
auth: api_key
connector: tavily
steps:
  - id: api_key
    type: form
    title: Key
    description: The key.
    fields:
      - {name: API_KEY, label: Key, type: string, required: true, secret: true, pattern: "^d-"}
actions:
  - name: run
    description: Runs.
    retryable: true
    annotations: {readOnlyHint: true}
    input_schema:
      type: object
      properties: {q: {type: string}}
      required: [q]
`

const validOAuth = `name: hosted
type: mcp
title: Hosted
description: A hosted MCP server.
categories: [developer]
auth: oauth
connector: mcp
mcp_url: https://mcp.example.com/mcp
oauth:
  provider: example
  authorization_url: https://example.com/oauth/authorize
  token_url: https://example.com/oauth/token
  scopes: [read]
  pkce: true
steps:
  - {id: oauth, type: oauth, title: Connect, description: Sign in.}
`

// conditionalStep is a second form step of validBuiltin whose token field
// depends on its mode field.
const conditionalStep = `  - id: auth
    type: form
    title: Auth
    description: How to authenticate.
    fields:
      - {name: mode, label: Mode, type: enum, options: [none, bearer], default: none, required: true}
      - {name: token, label: Token, type: string, secret: true, required_when: {mode: [bearer]}}
actions:`

// withConditional returns validBuiltin with conditionalStep, edited by old → new.
func withConditional(old, new string) string {
	return strings.Replace(strings.Replace(validBuiltin, "actions:", conditionalStep, 1), old, new, 1)
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, body := range files {
		m[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return m
}

func TestParseAcceptsValid(t *testing.T) {
	c, err := catalog.Parse(mapFS(map[string]string{"demo.yaml": validBuiltin, "hosted.yaml": validOAuth}))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := c.Get("demo")
	if !ok {
		t.Fatal("demo missing")
	}
	a, _ := e.Action("run")
	if string(a.InputSchema) != `{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}` {
		t.Errorf("InputSchema = %s", a.InputSchema)
	}
}

func TestParseRequiredWhen(t *testing.T) {
	c, err := catalog.Parse(mapFS(map[string]string{"demo.yaml": withConditional("", "")}))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.Get("demo")
	f, ok := e.Steps[1].Field("token")
	if !ok || !f.Conditional() || f.Condition() != "mode is bearer" {
		t.Fatalf("token field: %+v", f)
	}
	for _, tc := range []struct {
		mode        string
		has         bool
		used, known bool
	}{{"bearer", true, true, true}, {"none", true, false, true}, {"", false, false, false}} {
		used, known := f.Used(func(name string) (string, bool) { return tc.mode, name == "mode" && tc.has })
		if used != tc.used || known != tc.known {
			t.Errorf("mode %q: Used = %t, %t; want %t, %t", tc.mode, used, known, tc.used, tc.known)
		}
	}
}

func TestParseDefaultsSchema(t *testing.T) {
	src := strings.Replace(validBuiltin, "    input_schema:\n      type: object\n      properties: {q: {type: string}}\n      required: [q]\n", "", 1)
	c, err := catalog.Parse(mapFS(map[string]string{"demo.yaml": src}))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.Get("demo")
	if a, _ := e.Action("run"); string(a.InputSchema) != `{"type":"object"}` {
		t.Errorf("default InputSchema = %s", a.InputSchema)
	}
}

// TestParseRefuses holds one case per refusal: each edits a valid file and
// expects a problem naming the file and field.
func TestParseRefuses(t *testing.T) {
	r := strings.Replace
	cases := []struct {
		name  string
		files map[string]string
		want  string // substring of the error: "file: field"
	}{
		{"duplicate name", map[string]string{"demo.yaml": validBuiltin, "copy.yaml": validBuiltin}, "duplicate name \"demo\", also in"},
		{"name not a slug", map[string]string{"Demo_1.yaml": r(validBuiltin, "name: demo", "name: Demo_1", 1)}, "Demo_1.yaml: name: \"Demo_1\" is not a lowercase slug"},
		{"name not file name", map[string]string{"x.yaml": validBuiltin}, "x.yaml: name: must match the file name"},
		{"unknown type", map[string]string{"demo.yaml": r(validBuiltin, "type: builtin", "type: plugin", 1)}, "demo.yaml: type: unknown type"},
		{"unknown auth", map[string]string{"demo.yaml": r(validBuiltin, "auth: api_key", "auth: magic", 1)}, "demo.yaml: auth: unknown auth"},
		{"unknown connector", map[string]string{"demo.yaml": r(validBuiltin, "connector: tavily", "connector: smtp", 1)}, "demo.yaml: connector: unknown connector"},
		{"unknown step type", map[string]string{"demo.yaml": r(validBuiltin, "type: form", "type: wizard", 1)}, "demo.yaml: steps[0].type: unknown step type"},
		{"unknown field type", map[string]string{"demo.yaml": r(validBuiltin, "type: string, required", "type: blob, required", 1)}, "demo.yaml: steps[0].fields[0].type: unknown field type"},
		{"unknown yaml key", map[string]string{"demo.yaml": r(validBuiltin, "title: Demo", "title: Demo\ncolour: red", 1)}, "demo.yaml: invalid YAML"},
		{"duplicate step id", map[string]string{"demo.yaml": r(validBuiltin, "actions:", "  - id: api_key\n    type: form\n    title: Again\n    fields: [{name: other, label: Other, type: string}]\nactions:", 1)}, "demo.yaml: steps[1].id: duplicate step id"},
		{"duplicate field name", map[string]string{"demo.yaml": r(validBuiltin, "      - {name: API_KEY", "      - {name: API_KEY, label: Again, type: string, secret: true}\n      - {name: API_KEY", 1)}, "demo.yaml: steps[0].fields[1].name: duplicate field name"},
		{"duplicate field across steps", map[string]string{"demo.yaml": r(validBuiltin, "actions:", "  - id: more\n    type: form\n    title: More\n    fields: [{name: API_KEY, label: Again, type: string, secret: true}]\nactions:", 1)}, "demo.yaml: steps[1].fields[0].name: duplicate field name"},
		{"pattern does not compile", map[string]string{"demo.yaml": r(validBuiltin, `pattern: "^d-"`, `pattern: "^(d-"`, 1)}, "demo.yaml: steps[0].fields[0].pattern: does not compile"},
		{"enum without options", map[string]string{"demo.yaml": r(validBuiltin, "{name: API_KEY, label: Key, type: string", "{name: API_KEY, label: Key, type: enum", 1)}, "demo.yaml: steps[0].fields[0].options: an enum field needs at least one option"},
		{"enum default not an option", map[string]string{"demo.yaml": r(validBuiltin, "type: string, required", "type: enum, options: [a, b], default: c, required", 1)}, "demo.yaml: steps[0].fields[0].default"},
		{"secret-looking field not secret", map[string]string{"demo.yaml": r(validBuiltin, "secret: true", "secret: false", 1)}, "demo.yaml: steps[0].fields[0].secret: field \"API_KEY\" looks like a credential"},
		{"token field not secret", map[string]string{"demo.yaml": r(validBuiltin, "{name: API_KEY, label: Key, type: string, required: true, secret: true", "{name: access_token, label: Key, type: string, required: true, secret: false", 1)}, "steps[0].fields[0].secret"},
		{"password field not secret", map[string]string{"demo.yaml": r(validBuiltin, "{name: API_KEY, label: Key, type: string, required: true, secret: true", "{name: Password, label: Key, type: string, required: true", 1)}, "steps[0].fields[0].secret"},
		{"headers object not secret", map[string]string{"demo.yaml": r(validBuiltin, "{name: API_KEY, label: Key, type: string, required: true, secret: true, pattern: \"^d-\"}", "{name: headers, label: Headers, type: object}", 1)}, "steps[0].fields[0].secret"},
		{"oauth step without provider", map[string]string{"hosted.yaml": r(validOAuth, "oauth:\n  provider: example\n  authorization_url: https://example.com/oauth/authorize\n  token_url: https://example.com/oauth/token\n  scopes: [read]\n  pkce: true\n", "", 1)}, "hosted.yaml: steps[0].type: an oauth step needs an oauth: provider block"},
		{"oauth http authorization url", map[string]string{"hosted.yaml": r(validOAuth, "https://example.com/oauth/authorize", "http://example.com/oauth/authorize", 1)}, "hosted.yaml: oauth.authorization_url: \"http://example.com/oauth/authorize\" is not an https URL"},
		{"oauth token url missing", map[string]string{"hosted.yaml": r(validOAuth, "  token_url: https://example.com/oauth/token\n", "", 1)}, "hosted.yaml: oauth.token_url"},
		{"oauth revocation url not https", map[string]string{"hosted.yaml": r(validOAuth, "  token_url: https://example.com/oauth/token\n", "  token_url: https://example.com/oauth/token\n  revocation_url: http://example.com/oauth/revoke\n", 1)}, "hosted.yaml: oauth.revocation_url"},
		{"oauth token auth unknown", map[string]string{"hosted.yaml": r(validOAuth, "  token_url: https://example.com/oauth/token\n", "  token_url: https://example.com/oauth/token\n  token_auth: private_key_jwt\n", 1)}, "hosted.yaml: oauth.token_auth"},
		{"oauth block without step", map[string]string{"hosted.yaml": r(validOAuth, "  - {id: oauth, type: oauth, title: Connect, description: Sign in.}", "  - {id: key, type: form, title: Key, description: The key., fields: [{name: x, label: X, type: string}]}", 1)}, "hosted.yaml: oauth: an oauth: block needs an oauth step"},
		{"mcp without url", map[string]string{"hosted.yaml": r(validOAuth, "mcp_url: https://mcp.example.com/mcp\n", "", 1)}, "hosted.yaml: mcp_url: is required"},
		{"mcp url not https", map[string]string{"hosted.yaml": r(validOAuth, "https://mcp.example.com/mcp", "ftp://mcp.example.com/mcp", 1)}, "hosted.yaml: mcp_url"},
		{"mcp with builtin connector", map[string]string{"hosted.yaml": r(validOAuth, "connector: mcp", "connector: tavily", 1)}, "hosted.yaml: connector: a tool of type mcp uses the mcp connector"},
		{"builtin without actions", map[string]string{"demo.yaml": validBuiltin[:strings.Index(validBuiltin, "actions:")]}, "demo.yaml: actions: a builtin tool needs at least one action"},
		{"retryable disagrees with annotations", map[string]string{"demo.yaml": r(validBuiltin, "annotations: {readOnlyHint: true}", "annotations: {readOnlyHint: false, destructiveHint: true}", 1)}, "demo.yaml: actions[0].retryable: is true but the annotations say false"},
		{"an action without annotations", map[string]string{"demo.yaml": r(validBuiltin, "retryable: true\n    annotations: {readOnlyHint: true}", "retryable: false", 1)}, "demo.yaml: actions[0].annotations: is required"},
		{"not retryable though idempotent", map[string]string{"demo.yaml": r(validBuiltin, "retryable: true\n    annotations: {readOnlyHint: true}", "retryable: false\n    annotations: {idempotentHint: true}", 1)}, "demo.yaml: actions[0].retryable: is false but the annotations say true"},
		{"duplicate action", map[string]string{"demo.yaml": validBuiltin + "  - {name: run, description: Again., retryable: false}\n"}, "demo.yaml: actions[1].name: duplicate action name"},
		{"schema not an object", map[string]string{"demo.yaml": r(validBuiltin, "      type: object\n", "      type: array\n", 1)}, "demo.yaml: actions[0].input_schema.type"},
		{"schema requires unknown property", map[string]string{"demo.yaml": r(validBuiltin, "required: [q]", "required: [z]", 1)}, "demo.yaml: actions[0].input_schema.required"},
		{"missing title", map[string]string{"demo.yaml": r(validBuiltin, "title: Demo\n", "", 1)}, "demo.yaml: title: is required"},
		{"no categories", map[string]string{"demo.yaml": r(validBuiltin, "categories: [search]\n", "", 1)}, "demo.yaml: categories"},
		{"empty catalog", map[string]string{}, "no catalog files"},
		{"required_when on a required field", map[string]string{"demo.yaml": withConditional("secret: true, required_when", "secret: true, required: true, required_when")}, "demo.yaml: steps[1].fields[1].required: a field with required_when"},
		{"required_when with a default", map[string]string{"demo.yaml": withConditional("secret: true, required_when", "secret: true, default: x, required_when")}, "demo.yaml: steps[1].fields[1].default: a field with required_when has no default"},
		{"required_when names no field", map[string]string{"demo.yaml": withConditional("{mode: [bearer]}", "{kind: [bearer]}")}, "demo.yaml: steps[1].fields[1].required_when.kind: names \"kind\", which is not a field of this step"},
		{"required_when names another step's field", map[string]string{"demo.yaml": withConditional("{mode: [bearer]}", "{API_KEY: [bearer]}")}, "steps[1].fields[1].required_when.API_KEY: names \"API_KEY\", which is not a field of this step"},
		{"required_when names itself", map[string]string{"demo.yaml": withConditional("{mode: [bearer]}", "{token: [x]}")}, "steps[1].fields[1].required_when.token: a field cannot depend on itself"},
		{"required_when names a non-enum field", map[string]string{"demo.yaml": withConditional("type: enum, options: [none, bearer], default: none", "type: string")}, "steps[1].fields[1].required_when.mode: names \"mode\", which is not an enum field"},
		{"required_when value not an option", map[string]string{"demo.yaml": withConditional("{mode: [bearer]}", "{mode: [basic]}")}, "steps[1].fields[1].required_when.mode[0]: \"basic\" is not one of the options of mode"},
		{"required_when without values", map[string]string{"demo.yaml": withConditional("{mode: [bearer]}", "{mode: []}")}, "steps[1].fields[1].required_when.mode: needs at least one value"},
		{"required_when on a conditional field", map[string]string{"demo.yaml": withConditional("default: none, required: true}", "default: none, required: true, required_when: {other: [a]}}\n      - {name: other, label: Other, type: enum, options: [a]}")}, "steps[1].fields[2].required_when.mode: names \"mode\", which has a required_when of its own"},
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
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
			if got := catalog.Check(fsys); len(got) != len(problems) {
				t.Errorf("Check found %d problems, Parse %d", len(got), len(problems))
			}
		})
	}
}

// TestParseListsEveryProblem checks that problems across files are all
// reported, not just the first.
func TestParseListsEveryProblem(t *testing.T) {
	_, err := catalog.Parse(mapFS(map[string]string{
		"demo.yaml":   strings.Replace(validBuiltin, "secret: true", "secret: false", 1),
		"hosted.yaml": strings.Replace(validOAuth, "auth: oauth", "auth: none", 1),
	}))
	var problems catalog.Problems
	if !errors.As(err, &problems) {
		t.Fatalf("err = %v", err)
	}
	files := map[string]bool{}
	for _, p := range problems {
		files[p.File] = true
	}
	if !files["demo.yaml"] || !files["hosted.yaml"] {
		t.Errorf("problems %v do not cover both files", problems)
	}
}
