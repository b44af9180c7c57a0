package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quiverhq/quiver/internal/jsondepth"
)

// FuzzParamShapesAsSDK: params that misshapen finds a member of the wrong
// kind in (screen's -32602) are params the SDK's own decoding refuses too,
// so screen never refuses what the SDK would take. A member given twice is
// left out: screen refuses it on purpose (misshapen says why).
func FuzzParamShapesAsSDK(f *testing.F) {
	methods := make([]string, 0, len(paramShapes))
	for m := range paramShapes {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	for _, p := range []string{
		`{"name":5}`, `{"n\u0061me":5}`, `{"name":"x","arguments":[]}`, `{"arguments":"s"}`, `{"_meta":"s"}`,
		`{"_meta":null,"name":null}`, `{"protocolVersion":1,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`,
		`{"clientInfo":{"name":1}}`, `{"clientInfo":{"version":{}}}`, `{"clientInfo":"x"}`, `{"Name":5}`,
		`{"cursor":true}`, `{"uri":[]}`, `{"level":0}`, `{"ref":"r","argument":{}}`, `{"context":1}`,
		`{"name":"a","name":1}`, `{"\u005fmeta":1}`, `{"clientInfo":{"n\u0061me":2}}`,
		// What the SDK takes (a wrong shape here would be caught).
		`{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"},"_meta":{}}`,
		`{"cursor":"","_meta":{"progressToken":1}}`, `{"level":"info"}`,
	} {
		for i := range methods {
			f.Add(uint8(i), []byte(p))
		}
	}
	send := bareSDK()
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		method := methods[int(which)%len(methods)]
		if len(params) > 4<<10 || !utf8.Valid(params) || jsondepth.Exceeds(params, maxDepth) || !json.Valid(params) {
			return
		}
		if start := skipSpace(params, 0); start == len(params) || params[start] != '{' {
			return
		}
		why := misshapen(method, params)
		if why == "" || strings.HasSuffix(why, "is given twice") {
			return
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
		if _, answer := send(body); !strings.Contains(answer, `"error"`) {
			t.Fatalf("%s %s: screen says %s; the SDK takes it: %s", method, params, why, answer)
		}
	})
}
