package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// The fuzz targets of fuzz_api_test.go speak raw HTTP/1.1 to one
// in-process server per target, so a fuzzed header or query reaches the
// server byte for byte (net/http's client refuses or rewrites much of it).

// fzCodeStatus is, for every error code of API.md's table (and the
// bad_request of a request refused before routing), the statuses it is
// answered with.
var fzCodeStatus = map[string][]int{
	"invalid_json":             {400},
	"invalid_idempotency_key":  {400},
	"idempotency_key_required": {400},
	"unauthorized":             {401},
	"forbidden":                {403},
	"not_found":                {404},
	"idempotency_key_reused":   {409},
	"request_in_progress":      {409},
	"tool_outcome_unknown":     {409, 504},
	"tool_not_configured":      {409},
	"payload_too_large":        {413},
	"validation_error":         {422},
	"invalid_arguments":        {422},
	"rate_limited":             {429},
	"tool_unreachable":         {502},
	"upstream_auth_failed":     {502},
	"unavailable":              {503},
	// Not in API.md's table: a request the HTTP server refuses before
	// routing (malformed request line, header, framing).
	"bad_request": {400, 411, 413, 414, 431, 501, 505},
}

// fzRaw sends one raw request on a fresh connection and reads the answer.
// The deadline only keeps a wedged server from hanging the fuzzer.
func fzRaw(t testing.TB, addr string, req []byte) *testserver.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := conn.Write(req); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no HTTP answer to %q: %v", fzClip(req), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer body to %q: %v", fzClip(req), err)
	}
	return &testserver.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func fzClip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// fzRequest builds a raw request. headers are name/value pairs, written as
// given (CR and LF are dropped so a fuzzed value cannot frame a second
// request). chunked sends the body as one chunk instead of Content-Length.
func fzRequest(method, target, apiKey string, body []byte, chunked bool, headers ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: quiver\r\nConnection: close\r\n", method, target)
	if apiKey != "" {
		fmt.Fprintf(&b, "X-API-KEY: %s\r\n", apiKey)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], fzNoCRLF(headers[i+1]))
	}
	switch {
	case body == nil:
	case chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		if len(body) > 0 {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(body), body)
		}
		b.WriteString("0\r\n\r\n")
		return b.Bytes()
	default:
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

func fzNoCRLF(s string) string { return strings.NewReplacer("\r", "", "\n", "").Replace(s) }

// fzCheck holds every answer to the contract's shape: a status the endpoint
// lists, never 500, X-Request-Id, and for every non-2xx the JSON error
// envelope with a code of API.md's table answered with its status, fields
// on a 422 and next_configuration_step on tool_not_configured.
func fzCheck(t testing.TB, req []byte, a *testserver.Response, allowed ...int) map[string]any {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nrequest: %q\nanswer: %d %v %s", fmt.Sprintf(format, args...), fzClip(req), a.Status, a.Header, a.Body)
	}
	if a.Header.Get("X-Request-Id") == "" {
		fail("no X-Request-Id")
	}
	ok := false
	for _, s := range allowed {
		ok = ok || s == a.Status
	}
	if !ok && a.Status < 400 {
		fail("status %d is not one the endpoint answers", a.Status)
	}
	if a.Status == 204 {
		return nil
	}
	if ct := a.Header.Get("Content-Type"); ct != fdJSONType {
		fail("Content-Type %q, want %q", ct, fdJSONType)
	}
	var m map[string]any
	if err := json.Unmarshal(a.Body, &m); err != nil || m == nil {
		fail("body is not a JSON object: %v", err)
	}
	if a.Status < 300 {
		return m
	}
	code, _ := m["error"].(string)
	msg, _ := m["message"].(string)
	if code == "" || msg == "" {
		fail("not the error envelope")
	}
	statuses, known := fzCodeStatus[code]
	if !known {
		fail("error code %q is not in API.md's table", code)
	}
	inTable := false
	for _, s := range statuses {
		inTable = inTable || s == a.Status
	}
	if !inTable {
		fail("code %q answered with %d", code, a.Status)
	}
	if !ok && code != "bad_request" {
		fail("status %d is not one the endpoint answers", a.Status)
	}
	if a.Status == 422 {
		f, _ := m["fields"].(map[string]any)
		if len(f) == 0 {
			fail("422 without fields")
		}
		for k, v := range f {
			if s, _ := v.(string); s == "" {
				fail("fields.%s is not a message", k)
			}
		}
	}
	if code == "tool_not_configured" {
		if _, ok := m["next_configuration_step"]; !ok {
			fail("tool_not_configured without next_configuration_step")
		}
	}
	if a.Status == 429 || code == "request_in_progress" {
		if a.Header.Get("Retry-After") == "" {
			fail("no Retry-After")
		}
	}
	return m
}

// fzCounter is a tool server that counts the requests reaching it.
type fzCounter struct {
	hits atomic.Int64
}

func (c *fzCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	c.hits.Add(1)
	if strings.HasPrefix(r.URL.Path, "/fail") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		_, _ = w.Write([]byte(`{"error":"boom"}`))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/page") {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<html><head><title>t</title></head><body><a href="/x">x</a></body></html>`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// fzWireKey is the Idempotency-Key the server sees for value sent on the
// wire (HTTP strips surrounding spaces and tabs), and whether API.md calls
// it valid: 1–255 printable ASCII characters.
func fzWireKey(value string) (string, bool) {
	k := strings.Trim(fzNoCRLF(value), " \t")
	if len(k) < 1 || len(k) > 255 {
		return k, false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return k, false
		}
	}
	return k, true
}
