package mcpserver

// The kinds of params members, for screen.
//
// The SDK decodes a request's params into its Go types, and a member of the
// wrong JSON kind fails that with Go's own text ("cannot unmarshal ... into
// Go struct field mcp.initializeParamsV2.protocolVersion of type string");
// for initialize the error even has code 0, which JSON-RPC does not define.
// screen says these as -32602 in words a client can act on.

import "strconv"

// shape is the JSON kind a params member must have when it is given (null
// is taken as not given, as the SDK's decoding takes it): '"' a string, '{'
// an object; inner are the shapes of an object's own members.
type shape struct {
	name  string
	kind  byte
	inner []shape
}

// metaShape is the _meta every request's and notification's params may
// carry.
var metaShape = shape{name: "_meta", kind: '{'}

// paramShapes are, for each method of sdkMethods, the members MCP's schema
// types and the SDK decodes into a string or an object. TestParamShapes
// checks that the SDK refuses each of them given as another kind, so screen
// never refuses what the SDK would take.
var paramShapes = map[string][]shape{
	"initialize": {
		{name: "protocolVersion", kind: '"'},
		{name: "capabilities", kind: '{'},
		{name: "clientInfo", kind: '{', inner: []shape{{name: "name", kind: '"'}, {name: "version", kind: '"'}}},
	},
	"tools/list":               {{name: "cursor", kind: '"'}},
	"tools/call":               {{name: "name", kind: '"'}, {name: "arguments", kind: '{'}},
	"prompts/list":             {{name: "cursor", kind: '"'}},
	"prompts/get":              {{name: "name", kind: '"'}, {name: "arguments", kind: '{'}},
	"resources/list":           {{name: "cursor", kind: '"'}},
	"resources/templates/list": {{name: "cursor", kind: '"'}},
	"resources/read":           {{name: "uri", kind: '"'}},
	"resources/subscribe":      {{name: "uri", kind: '"'}},
	"resources/unsubscribe":    {{name: "uri", kind: '"'}},
	"logging/setLevel":         {{name: "level", kind: '"'}},
	"completion/complete":      {{name: "ref", kind: '{'}, {name: "argument", kind: '{'}, {name: "context", kind: '{'}},
}

// misshapen says which member of obj, the params of method (a JSON object,
// valid), is not of its kind, and is "" when none is. A member given twice
// is said too: the SDK would take the last and a caller may have meant the
// first.
func misshapen(method string, obj []byte) string {
	return misshapenIn(obj, paramShapes[method], "", true)
}

func misshapenIn(obj []byte, shapes []shape, at string, top bool) string {
	ms, _ := objectMembers(obj)
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			return strconv.Quote(at+m.key) + " is given twice"
		}
		seen[m.key] = true
		want, ok := shapeOf(shapes, m.key, top)
		v := obj[m.value:m.end]
		if !ok || string(v) == "null" {
			continue
		}
		if v[0] != want.kind {
			return strconv.Quote(at+m.key) + " must be " + kindName(want.kind) + ", not " + kindName(v[0])
		}
		if want.inner != nil {
			if why := misshapenIn(v, want.inner, at+m.key+".", false); why != "" {
				return why
			}
		}
	}
	return ""
}

// shapeOf finds name's shape among shapes, and _meta's at the top of params.
func shapeOf(shapes []shape, name string, top bool) (shape, bool) {
	if top && name == metaShape.name {
		return metaShape, true
	}
	for _, s := range shapes {
		if s.name == name {
			return s, true
		}
	}
	return shape{}, false
}

// kindName names the JSON kind of a value starting with b.
func kindName(b byte) string {
	switch b {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
