package httprequest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors/httprequest"
)

// A JSON answer that starts with a UTF-8 byte order mark (as some .NET
// and Windows servers send) is still parsed JSON, as RFC 8259 §8.1 lets a
// parser take it, not text the caller has to parse again.
func TestJSONWithByteOrderMark(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, "\xEF\xBB\xBF{\"a\":1}")
	}))
	t.Cleanup(srv.Close)
	res, err := open().Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, res)
	if m, ok := r.Body.(map[string]any); !ok || m["a"] != float64(1) {
		t.Errorf("body = %#v", r.Body)
	}
}

// A JSON answer in a declared charset other than UTF-8 is decoded from it
// before it is parsed: its strings keep their letters, not U+FFFD.
func TestJSONInItsCharset(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=iso-8859-1")
		io.WriteString(w, "{\"name\":\"Caf\xe9\"}")
	}))
	t.Cleanup(srv.Close)
	res, err := open().Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, res)
	if m, ok := r.Body.(map[string]any); !ok || m["name"] != "Café" {
		t.Errorf("body = %#v", r.Body)
	}
}

// The token is masked in what the caller gets, so in the body as decoded
// from its charset: an echo answering in UTF-16 spells it with a zero
// byte after each letter, which a mask of the raw bytes never matches.
func TestTokenHiddenInItsCharset(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var utf16 []byte
		for _, c := range []byte("you sent " + r.Header.Get("Authorization")) {
			utf16 = append(utf16, c, 0)
		}
		for _, ct := range []string{"text/plain; charset=utf-16le", "application/json; charset=utf-16le"} {
			if r.URL.Path == "/"+ct[:4] {
				w.Header().Set("Content-Type", ct)
			}
		}
		w.Write(utf16)
	}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/text", "/appl"} {
		raw, _ := json.Marshal(map[string]string{"path": path})
		res, err := open().Call(context.Background(), tool(srv.URL, httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "s3cret-token"), "get", raw)
		if err != nil {
			t.Fatal(err)
		}
		r := decode(t, res)
		if s, _ := r.Body.(string); strings.Contains(s, "s3cret-token") || !strings.HasPrefix(s, "you sent Bearer ") {
			t.Errorf("%s: body %q", path, r.Body)
		}
	}
}
