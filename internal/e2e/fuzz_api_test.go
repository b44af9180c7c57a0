package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// fzCallStatuses are the statuses API.md lists for the call endpoint with a
// valid API key.
var fzCallStatuses = []int{200, 400, 403, 404, 409, 413, 422, 429, 502, 503, 504}

// fzCallMode bits of FuzzCallEndpoint's mode.
const (
	fzKey         = 1 << iota // send Idempotency-Key
	fzKeyTwice                // send it twice
	fzBearer                  // authenticate with Authorization: Bearer
	fzChunked                 // send the body chunked
	fzNoCT                    // send no Content-Type
	fzNoBody                  // send no body at all
	fzAlsoXAPIKey             // with fzBearer: send X-API-KEY too; without: authenticate with a read-only key
	fzPad                     // pad the body with white space to the body limit, one under or one over
)

// FuzzCallEndpoint sends fuzzed bodies, Content-Types and Idempotency-Keys
// to POST /api/v1/agents/custom-tools/call/ of one server whose account has
// an http-request tool and a browser tool, both pointed at a server that
// counts the requests reaching it. Every answer is a status the endpoint
// lists in the error envelope; the tool server is reached only by a 200
// that is not a replay (or a 504), at most once per request and per key;
// a key refused before dispatch is released: the same key with a valid
// body runs.
func FuzzCallEndpoint(f *testing.F) {
	srv := testserver.Start(f, testserver.Options{Env: map[string]string{
		"QUIVER_CALL_TIMEOUT": "10s", "QUIVER_LOG_LEVEL": "error"}})
	counter := &fzCounter{}
	ts := httptest.NewServer(counter)
	f.Cleanup(ts.Close)
	httpID := connectHTTPTool(f, srv.URL, srv.Key, ts.URL)
	r := testserver.Do(f, srv.URL, srv.Key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
	if r.Status != 201 {
		f.Fatalf("browser: %d %s", r.Status, r.Body)
	}
	browserID := int64(r.JSON()["id"].(float64))
	r = testserver.Do(f, srv.URL, srv.Key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
	if r.Status != 201 {
		f.Fatalf("unconfigured: %d %s", r.Status, r.Body)
	}
	unconfID := int64(r.JSON()["id"].(float64))
	addr := strings.TrimPrefix(srv.URL, "http://")
	readOnly, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		f.Fatal(err)
	}

	post := func(path string) string {
		return fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":%q}}`, httpID, path)
	}
	seeds := []string{
		post("/a"),
		fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":"/g","query":{"a":"b"}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"patch","arguments":{"path":"/fail","body":{"x":[1,2,{"y":null}]}}}`, httpID),
		`{"tool":"http-request","action":"post","arguments":{"path":"/n","headers":{"X-A":"1"}}}`,
		fmt.Sprintf(`{"tool":"browser","action":"fetch_page","arguments":{"url":%q}}`, ts.URL+"/page"),
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":"not a url"}}`, browserID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/u"}}`, unconfID),
		fmt.Sprintf(`{"tool":%d,"action":"nope","arguments":{}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":1}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":"x"}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post"}`, httpID),
		fmt.Sprintf(`{"tool":%d,"tool":%d,"action":"post","arguments":{"path":"/d"}}`, httpID, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/\ud800"}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/\u0000"}}`, httpID),
		fmt.Sprintf("{\"tool\":%d,\"action\":\"post\",\"arguments\":{\"path\":\"/\xff\"}}", httpID),
		"\xef\xbb\xbf" + post("/bom"),
		post("/trail") + " x",
		post("/trail2") + "{}",
		`{"tool":12345678901234567890,"action":"post","arguments":{}}`,
		`{"tool":1e400,"action":"post","arguments":{}}`,
		`{"tool":-1,"action":"post","arguments":{}}`,
		`{"tool":1.5,"action":"post","arguments":{}}`,
		`{"tool":null,"action":null,"arguments":null}`,
		`{"tool":"","action":"","arguments":{}}`,
		`{"tool":true}`,
		`[]`, `null`, `"x"`, `1`, ``, ` `, `{`, `{"a":}`, `{}`,
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/deep","body":%s1%s}}`, httpID,
			strings.Repeat("[", 10000), strings.Repeat("]", 10000)),
		strings.Repeat("[", 100000),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/long","body":"%s"}}`, httpID, strings.Repeat("a", 70000)),
		fmt.Sprintf(`{"tool":%d,"action":%q,"arguments":{}}`, httpID, strings.Repeat("p", 300)),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/n","body":12345678901234567890123456789e-99999}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/h","headers":{"X-A":"a\r\nX-B: c"}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/h","headers":{"":"x","Bad Name":"y"}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/h","headers":{"Host":"evil","Content-Length":"5","Transfer-Encoding":"chunked"}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/h","headers":{"X-A":1,"X-B":null}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/q","query":{"a":1,"b":null,"c":["x","y"],"d":{"e":1}}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"http://127.0.0.2:1/abs"}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"//127.0.0.2:1/x"}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"/../../etc/x?y=1#z"}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":"%%zz"}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"post","arguments":{"path":""}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":"/x","body":{"a":1}}}`, httpID),
		fmt.Sprintf(`{"tool":%d,"action":"head","arguments":{"path":"/x"}}`, httpID),
		fmt.Sprintf(`{"tool":"%d","action":"get","arguments":{"path":"/x"}}`, httpID),
		` {"tool":" browser ","action":"fetch_page","arguments":{"url":"http://127.0.0.1:1/"}}`,
		`{"tool":"Browser","action":"fetch_page","arguments":{"url":"http://[::1]:1/"}}`,
		`{"tool":0,"action":"x"}`, `{"tool":-0,"action":"x"}`, `{"tool":1.0,"action":"get","arguments":{"path":"/x"}}`,
		`{"tool":1e0,"action":"get","arguments":{"path":"/x"}}`, `{"tool":9223372036854775807,"action":"x"}`,
		`{"tool":9223372036854775808,"action":"x"}`,
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":"http://127.0.0.1:1/","extra":1}}`, browserID),
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":"file:///etc/passwd"}}`, browserID),
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":"http://user:pw@127.0.0.1:1/"}}`, browserID),
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":"http://0x7f.1:1/"}}`, browserID),
		fmt.Sprintf(`{"tool":%d,"action":"fetch_page","arguments":{"url":%q}}`, browserID, ts.URL+"/page\u0000"),
	}
	keys := []string{"", "k1", strings.Repeat("k", 255), strings.Repeat("k", 256), " lead", "trail ", "a\tb",
		"caf\xc3\xa9", "\x00", "\x7f", "~!@#$%^&*()_+{}|:\"<>?", "a b"}
	cts := []string{"application/json", "text/plain", "", "application/json; charset=latin1", "multipart/form-data; boundary=x",
		"application/x-www-form-urlencoded"}
	for i, s := range seeds {
		mode := uint8(i)&(fzChunked|fzNoCT) | fzKey
		key := fmt.Sprint("seed-", i)
		if i%7 == 0 {
			key = keys[i%len(keys)] + key
		}
		f.Add([]byte(s), cts[i%len(cts)], key, mode)
	}
	for i, k := range keys {
		f.Add([]byte(post("/key")), "application/json", k, uint8(fzKey|uint8(i%2)*fzKeyTwice))
	}
	f.Add([]byte(post("/bearer")), "application/json", "b1", uint8(fzKey|fzBearer))
	f.Add([]byte(post("/both")), "application/json", "b2", uint8(fzKey|fzBearer|fzAlsoXAPIKey))
	f.Add([]byte(post("/ro")), "application/json", "ro1", uint8(fzKey|fzAlsoXAPIKey))
	f.Add([]byte(fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":"/ro"}}`, httpID)), "application/json", "ro2", uint8(fzKey|fzAlsoXAPIKey))
	f.Add([]byte(fmt.Sprintf(`{"tool":%d,"action":"put","arguments":{"path":"/ro"}}`, httpID)), "application/json", "ro3", uint8(fzKey|fzAlsoXAPIKey))
	f.Add([]byte(post("/chunk")), "application/json", "c1", uint8(fzKey|fzChunked))
	f.Add([]byte(""), "application/json", "c2", uint8(fzKey|fzChunked))
	f.Add([]byte(nil), "", "nb", uint8(fzKey|fzNoBody|fzNoCT))
	for i, p := range []string{"/pad-under", "/pad-at-", "/pad-over"} { // lengths 0, 1 and 2 mod 3
		f.Add([]byte(post(p+strings.Repeat("x", i))), "application/json", "pad"+fmt.Sprint(i), uint8(fzKey|fzPad|uint8(i%2)*fzChunked))
	}

	// What the server was told per key: a key it saw, and the tool-server
	// hits its requests made.
	seen := map[string]bool{}
	keyHits := map[string]int64{}
	f.Fuzz(func(t *testing.T, body []byte, ct, key string, mode uint8) {
		var h []string
		if mode&fzBearer != 0 {
			h = append(h, "Authorization", "Bearer "+srv.Key)
		}
		if mode&fzNoCT == 0 {
			h = append(h, "Content-Type", ct)
		}
		if mode&fzKey != 0 {
			h = append(h, "Idempotency-Key", key)
			if mode&fzKeyTwice != 0 {
				h = append(h, "Idempotency-Key", key)
			}
		}
		apiKey := srv.Key
		if mode&fzBearer != 0 && mode&fzAlsoXAPIKey == 0 {
			apiKey = ""
		} else if mode&fzBearer == 0 && mode&fzAlsoXAPIKey != 0 {
			apiKey = readOnly
		}
		if mode&fzNoBody != 0 {
			body = nil
		} else {
			body = fzPadded(body, mode&fzPad != 0)
		}
		req := fzRequest("POST", callPath, apiKey, body, mode&fzChunked != 0, h...)
		before := counter.hits.Load()
		if fzNeedsDNS(body) {
			t.Skip("a page on a host name: this machine's resolver takes seconds to fail")
		}
		a := fzRaw(t, addr, req)
		delta := counter.hits.Load() - before
		m := fzCheck(t, req, a, fzCallStatuses...)
		replayed := a.Header.Get("Idempotent-Replayed") == "true"
		if a.Status == 200 {
			for _, name := range []string{"call_id", "tool", "action", "is_error"} {
				if _, ok := m[name]; !ok {
					t.Fatalf("200 without %s: %s", name, a.Body)
				}
			}
		}
		if delta > 1 || (delta == 1 && !(a.Status == 200 && !replayed || a.Status == 504)) {
			t.Fatalf("tool server reached %d times for %d (replayed %v)\nrequest %q\nanswer %s", delta, a.Status, replayed, fzClip(req), a.Body)
		}
		wk, valid := fzWireKey(key)
		oneKey := mode&fzKey != 0 && mode&fzKeyTwice == 0 && valid
		if !oneKey {
			return
		}
		fresh := !seen[wk]
		seen[wk] = true
		keyHits[wk] += delta
		if keyHits[wk] > 1 {
			t.Fatalf("key %q reached the tool server %d times", wk, keyHits[wk])
		}
		if fresh && a.Status == 200 && !replayed {
			fzReplays(t, addr, srv.Key, counter, body, wk, a)
			return
		}
		code, _ := m["error"].(string)
		refusedBeforeDispatch := a.Status >= 400 && a.Status < 500 && code != "idempotency_key_reused" &&
			code != "request_in_progress" && code != "tool_outcome_unknown" && code != "rate_limited"
		if !fresh || !refusedBeforeDispatch {
			return
		}
		// The key was released: nothing is kept under it, and the
		// corrected call runs with it.
		if st := fzKeyState(t, addr, srv.Key, wk); st.Status != 404 {
			t.Fatalf("key %q refused with %d %s is kept: %d %s", wk, a.Status, a.Body, st.Status, st.Body)
		}
		good := []byte(post("/released"))
		req2 := fzRequest("POST", callPath, srv.Key, good, false, "Content-Type", "application/json", "Idempotency-Key", wk)
		before = counter.hits.Load()
		a2 := fzRaw(t, addr, req2)
		delta = counter.hits.Load() - before
		fzCheck(t, req2, a2, fzCallStatuses...)
		if a2.Status != 200 || a2.Header.Get("Idempotent-Replayed") != "" || delta != 1 {
			t.Fatalf("key %q not released after %d %s: corrected call got %d (replayed %q, %d hits) %s",
				wk, a.Status, a.Body, a2.Status, a2.Header.Get("Idempotent-Replayed"), delta, a2.Body)
		}
		keyHits[wk] += delta
	})
}

// fzNeedsDNS reports whether body asks the browser for a page on a host
// name rather than an address.
func fzNeedsDNS(body []byte) bool {
	var b struct {
		Arguments struct {
			URL string `json:"url"`
		} `json:"arguments"`
	}
	if json.Unmarshal(body, &b) != nil || b.Arguments.URL == "" {
		return false
	}
	u, err := url.Parse(b.Arguments.URL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h != "" && h != "localhost" && net.ParseIP(h) == nil
}

// fzReplays checks a key's first 200: the same body with other whitespace
// replays it byte for byte without reaching the tool, and a body with one
// more member is idempotency_key_reused.
func fzReplays(t *testing.T, addr, apiKey string, counter *fzCounter, body []byte, key string, first *testserver.Response) {
	t.Helper()
	var compact, same bytes.Buffer
	if json.Compact(&compact, body) != nil || json.Indent(&same, compact.Bytes(), "\t ", "\n  ") != nil {
		same.Reset()
		same.Write(body)
	}
	req := fzRequest("POST", callPath, apiKey, same.Bytes(), false, "Content-Type", "application/json", "Idempotency-Key", key)
	before := counter.hits.Load()
	a := fzRaw(t, addr, req)
	if n := counter.hits.Load() - before; a.Status != 200 || a.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(a.Body, first.Body) || n != 0 {
		t.Fatalf("retry of %q with key %q: %d (replayed %q, %d hits) %s\nfirst answer %s", fzClip(req), key, a.Status,
			a.Header.Get("Idempotent-Replayed"), n, a.Body, first.Body)
	}
	st := fzKeyState(t, addr, apiKey, key)
	if sm := st.JSON(); st.Status != 200 || sm["key"] != key || sm["state"] != "succeeded" || sm["call_id"] != first.JSON()["call_id"] {
		t.Fatalf("key %q after its 200 %s: %d %s", key, first.Body, st.Status, st.Body)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return
	}
	m["zz_fuzz_other"] = json.RawMessage("1")
	other, err := json.Marshal(m)
	if err != nil {
		return
	}
	req = fzRequest("POST", callPath, apiKey, other, false, "Content-Type", "application/json", "Idempotency-Key", key)
	a = fzRaw(t, addr, req)
	fzCheck(t, req, a, fzCallStatuses...)
	if n := counter.hits.Load() - before; a.Status != 409 || a.JSON()["error"] != "idempotency_key_reused" || n != 0 {
		t.Fatalf("other body %q with key %q: %d (%d hits) %s", fzClip(req), key, a.Status, n, a.Body)
	}
}

// fzBodyLimit is the server's default body limit (API.md: 1 MiB).
const fzBodyLimit = 1 << 20

// fzPadded is body, or with pad body followed by white space up to one
// byte under, at or over the body limit (by len(body) mod 3). A body over
// the limit already is left as it is.
func fzPadded(body []byte, pad bool) []byte {
	if body == nil {
		body = []byte{}
	}
	if !pad {
		return body
	}
	n := fzBodyLimit - 1 + len(body)%3
	if len(body) >= n {
		return body
	}
	return append(append([]byte{}, body...), bytes.Repeat([]byte(" "), n-len(body))...)
}

// fzKeyState reads GET /api/v1/idempotency-keys/{key}, checked as every
// answer is.
func fzKeyState(t *testing.T, addr, apiKey, key string) *testserver.Response {
	t.Helper()
	req := fzRequest("GET", "/api/v1/idempotency-keys/"+url.PathEscape(key), apiKey, nil, false)
	a := fzRaw(t, addr, req)
	fzCheck(t, req, a, 200, 404)
	return a
}
