package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestKeyHeaderBytes: Idempotency-Key header lines Go's client will not
// send, written by hand — a DEL, a control byte, bytes past ASCII, a value
// of spaces alone, the header twice in different case — each answer 400
// invalid_idempotency_key and run nothing; and keys that look like path
// segments ("." "..", a trailing "/") are shown by GET as themselves.
func TestKeyHeaderBytes(t *testing.T) {
	e := setupCalls(t, testserver.Options{})
	payload := mustJSON(callBody(e.id, "/raw-key", 1))
	send := func(line string) (int, map[string]any) {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nX-API-KEY: %s\r\n%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			callPath, e.srv.Key, line, len(payload), payload)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	for _, line := range []string{
		"Idempotency-Key: a\x7fb", "Idempotency-Key: a\x01b", "Idempotency-Key:    ",
		"Idempotency-Key: a\x80b", "Idempotency-Key: a\xffb",
		"idempotency-key: x1\r\nIDEMPOTENCY-KEY: x1",
	} {
		if status, m := send(line); status != 400 || m["error"] != "invalid_idempotency_key" {
			t.Errorf("%q: %d %v", line, status, m)
		}
	}
	if n := e.tool.count("/raw-key"); n != 0 {
		t.Fatalf("tool ran %d times", n)
	}
	// '+' is itself in a path segment, also beside an escaped character:
	// "a+b,c" is not "a b,c", another key, nor "+," the invalid " ,".
	for i, key := range []string{"t", "t/", ".", "..", "a/../b", "%2F", "a;b", "?x", "#", "a b,c", "a+b,c", "+,", "x+y/z"} {
		if r := e.call(callBody(e.id, "/seg", i), key); r.Status != 200 {
			t.Fatalf("%q: %d %s", key, r.Status, r.Body)
		}
		for _, suffix := range []string{"", "/"} {
			g := e.srv.Do("GET", "/api/v1/idempotency-keys/"+url.PathEscape(key)+suffix, nil)
			if g.Status != 200 || g.JSON()["key"] != key {
				t.Errorf("GET %q%s: %d %s", key, suffix, g.Status, g.Body)
			}
		}
	}
}
