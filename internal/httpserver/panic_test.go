package httpserver_test

import (
	"io"
	"net/http"
	"testing"
)

// A handler that panics before its header block is complete gets its
// connection closed with nothing sent, as net/http does: not a status line
// and some headers cut off mid-block.
func TestHandlerPanicSendsNoPartialHead(t *testing.T) {
	t.Parallel()
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		io.WriteString(w, "partial") // held: the header block is not complete
		panic("boom")
	}), nil)
	rc := dial(t, ts.addr)
	rc.send(get)
	b, err := io.ReadAll(rc.br)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 {
		t.Fatalf("a panicking handler's connection sent %q before closing", b)
	}
}
