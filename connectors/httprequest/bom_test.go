package httprequest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
