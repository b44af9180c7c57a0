package toolconfig

import (
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

// TestObjectFieldHeaders: an object field is a set of request headers
// (custom-mcp's headers). Two names that differ only in case are one
// header, of which only one value could be sent; a value with surrounding
// space is one HTTP strips before the server sees it. Both are refused,
// not silently sent otherwise than given.
func TestObjectFieldHeaders(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := cat.Get("custom-mcp")
	if !ok {
		t.Fatal("no custom-mcp entry")
	}
	step := &e.Steps[0]
	for _, tc := range []struct {
		headers string
		bad     string // a word the message holds; "" when accepted
	}{
		{`{"X-A":"1","X-B":"2"}`, ""},
		{`{"X-A":""}`, ""},
		{`{"X-A":"a b"}`, ""},
		{`{"x-a":"1","X-A":"2"}`, "more than once"},
		{`{"X-Api-Key":"1","x-api-KEY":"1"}`, "more than once"},
		{`{"X-A":" pad"}`, "space"},
		{`{"X-A":"pad "}`, "space"},
		{`{"X-A":"pad\u00a0"}`, "space"},
	} {
		_, bad := validateStep(step, answers(t, `{"url":"http://127.0.0.1:1/","headers":`+tc.headers+`}`))
		switch msg := bad["headers"]; {
		case tc.bad == "" && len(bad) != 0:
			t.Errorf("%s refused: %v", tc.headers, bad)
		case tc.bad != "" && !strings.Contains(msg, tc.bad):
			t.Errorf("%s: headers message %q, want one saying %q (all: %v)", tc.headers, msg, tc.bad, bad)
		}
	}
	// The message is the same on every run, whichever name the map yields first.
	first := ""
	for i := 0; i < 20; i++ {
		_, bad := validateStep(step, answers(t, `{"url":"http://127.0.0.1:1/","headers":{"b":"1","B":"2","a":"1","A":"2"}}`))
		if first == "" {
			first = bad["headers"]
		} else if bad["headers"] != first {
			t.Fatalf("message changes between runs: %q then %q", first, bad["headers"])
		}
	}
}
