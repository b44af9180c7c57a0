package mcpserver

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// statelessCall is a 2026-07-28 tools/call whose _meta is meta.
func statelessCall(meta string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{},"_meta":` + meta + `}}`)
}

func clientMeta(name string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + name +
		`","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
}

// TestParseCallRemembersMeta: a _meta accepted once under 2026-07-28 is
// accepted again without being decoded, and the set of them remembers
// nothing else: not a refused _meta, not one under another version, and
// no more than its bounds.
func TestParseCallRemembersMeta(t *testing.T) {
	var metas metaSet
	good := clientMeta("c")
	for i := 0; i < 2; i++ {
		req, ok := parseCall(statelessCall(good), protocolStateless, &metas)
		if !ok || !req.stateless || req.name != "My_Mail__read" {
			t.Fatalf("try %d: %+v %v", i, req, ok)
		}
		if !metas.has([]byte(good)) {
			t.Fatalf("try %d: the accepted _meta is not remembered", i)
		}
	}

	// The same _meta under a legacy header is still refused, and neither
	// it nor a _meta refused for itself joins the set.
	if _, ok := parseCall(statelessCall(good), "2025-11-25", &metas); ok {
		t.Error("a 2026-07-28 _meta under a legacy header was taken")
	}
	for _, bad := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":3,"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":[1e999]}`,
	} {
		for i := 0; i < 2; i++ {
			if _, ok := parseCall(statelessCall(bad), protocolStateless, &metas); ok {
				t.Errorf("try %d: _meta %s was taken", i, bad)
			}
		}
		if metas.has([]byte(bad)) {
			t.Errorf("refused _meta %s is remembered", bad)
		}
	}

	// Past its bounds the set stops growing; every _meta is still checked
	// and accepted as before.
	for i := 0; i < maxMetas+10; i++ {
		if _, ok := parseCall(statelessCall(clientMeta(fmt.Sprint("client-", i))), protocolStateless, &metas); !ok {
			t.Fatalf("client %d refused", i)
		}
	}
	if n := len(*metas.set.Load()); n != maxMetas {
		t.Errorf("the set holds %d _meta values, want %d", n, maxMetas)
	}
	long := clientMeta(strings.Repeat("x", maxMetaLen))
	var fresh metaSet
	if _, ok := parseCall(statelessCall(long), protocolStateless, &fresh); !ok || fresh.has([]byte(long)) {
		t.Errorf("a _meta over %d bytes: taken %v, remembered %v; want taken and not remembered", maxMetaLen, ok, fresh.has([]byte(long)))
	}
}

// TestFullMetaSetTakesNoLock: once the set is full, a call whose _meta
// is new (a client whose _meta differs on every request) costs the set one
// map lookup, as the doc says: it does not queue on the lock that adding
// takes.
func TestFullMetaSetTakesNoLock(t *testing.T) {
	var metas metaSet
	for i := 0; i < maxMetas; i++ {
		metas.add([]byte(clientMeta(fmt.Sprint("client-", i))))
	}
	metas.mu.Lock()
	defer metas.mu.Unlock()
	done := make(chan struct{})
	go func() {
		metas.add([]byte(clientMeta("one more")))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("add on a full set waited for the lock")
	}
}

// TestHeaderChecks pins the SDK's Content-Type and Accept checks, the
// common values that skip parsing included.
func TestHeaderChecks(t *testing.T) {
	for v, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"text/plain": false, "": false, "application/jsonx": false,
	} {
		if got := jsonContent(v); got != want {
			t.Errorf("jsonContent(%q) = %v, want %v", v, got, want)
		}
	}
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"text/event-stream, application/json"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/json"}, false},
		{[]string{"application/json, text/event-stream", "x"}, true},
		{nil, false},
	} {
		if got := acceptsBoth(c.values); got != c.want {
			t.Errorf("acceptsBoth(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}
