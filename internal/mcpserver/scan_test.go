package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/quiverhq/quiver/internal/jsondepth"
)

// FuzzEachMember holds eachMember to encoding/json: whatever it accepts is
// valid JSON whose members, decoded, are the ones it reported.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":1,"b":[true,false,null,{"c":"d\u00e9\n"}],"e":-0.5e+10}`,
		`{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`, `{"a\u0062":1}`,
		`{"a":"` + "\x01" + `"}`, `[1]`, `{"a":{"b":[1,2,{"c":[]}]}}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"<a>"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) || jsondepth.Exceeds(b, jsondepth.SDKLimit) {
			return
		}
		got := map[string][]byte{}
		dup := false
		ok := eachMember(b, func(k string, v []byte) bool {
			if _, seen := got[k]; seen {
				dup = true
			}
			got[k] = v
			return true
		})
		var want map[string]json.RawMessage
		err := json.Unmarshal(b, &want)
		if !ok {
			return // refusing is always allowed
		}
		if err != nil || want == nil {
			t.Fatalf("eachMember accepted %q, encoding/json: %v", b, err)
		}
		if dup {
			return // encoding/json keeps the last
		}
		if len(got) != len(want) {
			t.Fatalf("%q: members %d, encoding/json %d", b, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%q: member %q = %q, encoding/json %q", b, k, got[k], v)
			}
		}
	})
}
