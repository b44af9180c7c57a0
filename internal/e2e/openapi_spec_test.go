package e2e

import (
	"encoding/json"
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/quiverhq/quiver/internal/api"
	"github.com/quiverhq/quiver/internal/testserver"
)

// fdRoute is one documented route: its method and its path as the OpenAPI
// document spells it.
type fdRoute struct{ method, path string }

// fdRoutes is every route the server must answer, as in API.md. The
// document must hold exactly these, and the server must answer each.
var fdRoutes = []fdRoute{
	{"GET", "/healthz"},
	{"HEAD", "/healthz"},
	{"GET", "/readyz"},
	{"HEAD", "/readyz"},
	{"GET", "/metrics"},
	{"HEAD", "/metrics"},
	{"GET", "/openapi.json"},
	{"HEAD", "/openapi.json"},
	{"GET", "/api/v1/agents/tools/available/"},
	{"HEAD", "/api/v1/agents/tools/available/"},
	{"GET", "/api/v1/agents/tools/available/{name}/"},
	{"HEAD", "/api/v1/agents/tools/available/{name}/"},
	{"POST", "/api/v1/agents/custom-tools/"},
	{"GET", "/api/v1/agents/custom-tools/"},
	{"HEAD", "/api/v1/agents/custom-tools/"},
	{"GET", "/api/v1/agents/custom-tools/{id}/"},
	{"HEAD", "/api/v1/agents/custom-tools/{id}/"},
	{"DELETE", "/api/v1/agents/custom-tools/{id}/"},
	{"POST", "/api/v1/agents/custom-tools/{id}/provide-config/"},
	{"POST", "/api/v1/agents/custom-tools/{id}/reset-config/"},
	{"GET", "/api/v1/agents/custom-tools/{id}/actions/"},
	{"HEAD", "/api/v1/agents/custom-tools/{id}/actions/"},
	{"POST", "/api/v1/agents/custom-tools/call/"},
	{"GET", "/api/v1/agents/custom-tools/calls/"},
	{"HEAD", "/api/v1/agents/custom-tools/calls/"},
	{"GET", "/api/v1/idempotency-keys/{key}"},
	{"HEAD", "/api/v1/idempotency-keys/{key}"},
	{"POST", "/api/v1/agents/"},
	{"GET", "/api/v1/agents/"},
	{"HEAD", "/api/v1/agents/"},
	{"GET", "/api/v1/agents/{id}/"},
	{"HEAD", "/api/v1/agents/{id}/"},
	{"PATCH", "/api/v1/agents/{id}/"},
	{"DELETE", "/api/v1/agents/{id}/"},
	{"POST", "/api/v1/agents/{id}/mcp"},
	{"GET", "/api/v1/oauth/callback"},
}

// fdPendingRoutes are routes other packages register (internal/app's
// extraRoutes); until they are, their checks skip rather than fail.
var fdPendingRoutes = map[string]bool{
	"/api/v1/agents/{id}/mcp": true,
	"/api/v1/oauth/callback":  true,
}

// fdErrorCodes is API.md's error table plus the codes the server adds.
var fdErrorCodes = []string{
	"invalid_json", "invalid_idempotency_key", "idempotency_key_required", "unauthorized", "forbidden",
	"not_found", "idempotency_key_reused", "request_in_progress", "tool_outcome_unknown", "tool_not_configured",
	"payload_too_large", "validation_error", "invalid_arguments", "rate_limited", "tool_unreachable",
	"upstream_auth_failed", "upstream_refused", "unavailable", "bad_request", "internal",
}

// fdSpec is the OpenAPI document with a cache of compiled response schemas
// and a record of which operations a test exercised.
type fdSpec struct {
	raw []byte
	doc map[string]any

	mu       sync.Mutex
	compiled map[string]*jsonschema.Resolved
	seen     map[string][]int // "METHOD path" → statuses validated
}

func fdLoadSpec(t testing.TB) *fdSpec {
	t.Helper()
	raw := api.OpenAPI()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("internal/api/openapi.json is not JSON: %v", err)
	}
	return &fdSpec{raw: raw, doc: doc, compiled: map[string]*jsonschema.Resolved{}, seen: map[string][]int{}}
}

// pointer follows a local JSON pointer ("#/components/schemas/Tool").
func (s *fdSpec) pointer(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("ref %q is not local", ref)
	}
	var cur any = s.doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ref %q: %q is not in an object", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("ref %q: no %q", ref, part)
		}
	}
	return cur, nil
}

// deref resolves a Reference Object (responses, parameters, headers).
func (s *fdSpec) deref(v any) map[string]any {
	for i := 0; i < 10; i++ {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var err error
		if v, err = s.pointer(ref); err != nil {
			return nil
		}
	}
	return nil
}

func (s *fdSpec) operation(method, path string) map[string]any {
	item, _ := s.doc["paths"].(map[string]any)[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	return op
}

// fdRewrite deep-copies a schema, pointing component refs at $defs and, when
// strict, closing every object schema that lists its properties and says
// nothing of others: a response field the document does not declare fails.
func fdRewrite(v any, strict bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		for k, e := range x {
			if ref, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(ref, "#/components/schemas/", "#/$defs/", 1)
				continue
			}
			out[k] = fdRewrite(e, strict)
		}
		_, hasProps := x["properties"]
		_, hasAdditional := x["additionalProperties"]
		if strict && hasProps && !hasAdditional && x["type"] == "object" {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fdRewrite(e, strict)
		}
		return out
	}
	return v
}

// compile turns a schema of the document into a validator whose root holds
// every component schema in $defs.
func (s *fdSpec) compile(schema any) (*jsonschema.Resolved, error) {
	wrapper, _ := fdRewrite(schema, true).(map[string]any)
	if wrapper == nil {
		if b, ok := schema.(bool); ok && b {
			wrapper = map[string]any{}
		} else {
			return nil, fmt.Errorf("schema %v is not an object", schema)
		}
	}
	comps, _ := s.doc["components"].(map[string]any)["schemas"].(map[string]any)
	wrapper["$defs"] = fdRewrite(comps, true)
	wrapper["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	b, err := json.Marshal(wrapper)
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, err
	}
	return js.Resolve(nil)
}

// check validates an answer against what the document declares for the
// operation and status: the status is documented, its headers are, and the
// body matches the media type's schema.
func (s *fdSpec) check(t testing.TB, method, path string, r *testserver.Response) {
	t.Helper()
	opKey := method + " " + path
	op := s.operation(method, path)
	if op == nil {
		t.Errorf("%s: not in the OpenAPI document", opKey)
		return
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s → %d: no X-Request-Id", opKey, r.Status)
	}
	responses, _ := op["responses"].(map[string]any)
	resp := s.deref(responses[strconv.Itoa(r.Status)])
	if resp == nil {
		t.Errorf("%s → %d: status not documented; body %s", opKey, r.Status, fdClip(r.Body))
		return
	}
	s.mu.Lock()
	s.seen[opKey] = append(s.seen[opKey], r.Status)
	s.mu.Unlock()
	headers, _ := resp["headers"].(map[string]any)
	for name, h := range headers {
		if hm := s.deref(h); hm != nil && hm["required"] == true && r.Header.Get(name) == "" {
			t.Errorf("%s → %d: required header %s missing", opKey, r.Status, name)
		}
	}
	for _, name := range []string{"X-Request-Id", "Idempotent-Replayed", "Retry-After"} {
		if r.Header.Get(name) != "" && headers[name] == nil {
			t.Errorf("%s → %d: header %s sent but not documented", opKey, r.Status, name)
		}
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.Body) != 0 {
			t.Errorf("%s → %d: documented without a body, got %s", opKey, r.Status, fdClip(r.Body))
		}
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Errorf("%s → %d: Content-Type %q: %v", opKey, r.Status, r.Header.Get("Content-Type"), err)
		return
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		t.Errorf("%s → %d: media type %s not documented (have %v)", opKey, r.Status, mt, fdKeys(content))
		return
	}
	if mt != "application/json" {
		return
	}
	schemaKey := fmt.Sprintf("%s %d %s", opKey, r.Status, mt)
	s.mu.Lock()
	rs, ok := s.compiled[schemaKey]
	if !ok {
		rs, err = s.compile(media["schema"])
		if err != nil {
			s.mu.Unlock()
			t.Errorf("%s: schema does not compile: %v", schemaKey, err)
			return
		}
		s.compiled[schemaKey] = rs
	}
	s.mu.Unlock()
	var instance any
	if err := json.Unmarshal(r.Body, &instance); err != nil {
		t.Errorf("%s → %d: body is not JSON: %v: %s", opKey, r.Status, err, fdClip(r.Body))
		return
	}
	if err := rs.Validate(instance); err != nil {
		t.Errorf("%s → %d: body does not match the documented schema: %v\nbody: %s", opKey, r.Status, err, fdClip(r.Body))
	}
}

func fdClip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func fdKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
