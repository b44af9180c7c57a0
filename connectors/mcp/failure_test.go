package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
)

// failingServer serves tools that count a run and then answer tools/call
// with a JSON-RPC error: the tool acted, and the server reports a failure.
type failingServer struct {
	url  string
	runs map[string]*atomic.Int64
}

// failures are the failing server's tools and what each answers with.
var failures = map[string]error{
	// A handler's plain error: the SDK sends it as a JSON-RPC error.
	"plain_error": errors.New("the disk filled up after the draft was saved"),
	"internal_error": &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the mailer crashed after sending",
		Data: json.RawMessage(`{"sent":true}`)},
	"own_code": &jsonrpc.Error{Code: -31000, Message: "quota exceeded midway"},
	// Invalid params is a refusal before the tool ran, whatever the
	// handler did (this one counts a run to prove the rule is by code).
	"invalid_params": &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "to is required"},
}

func startFailing(t *testing.T, stateless bool) *failingServer {
	t.Helper()
	fs := &failingServer{runs: map[string]*atomic.Int64{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "failing", Version: "1"}, nil)
	for name, ferr := range failures {
		n := &atomic.Int64{}
		fs.runs[name] = n
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n.Add(1)
				return nil, ferr
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	fs.url = hs.URL
	return fs
}

// TestCallErrorAfterActingIsTheOutcome: a JSON-RPC error whose code does
// not say the request went unprocessed is the call's outcome (an error
// result, so the engine keeps the key), not a refusal that would release
// the key for a second run. On the fast path and the SDK's, both modes.
func TestCallErrorAfterActingIsTheOutcome(t *testing.T) {
	t.Parallel()
	for _, sdk := range []bool{false, true} {
		for _, stateless := range []bool{false, true} {
			fs := startFailing(t, stateless)
			c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk})
			tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": fs.url}, Version: 1}
			for name, want := range map[string]struct {
				code int64
				msg  string
				data string
			}{
				"plain_error":    {0, "the disk filled up after the draft was saved", ""},
				"internal_error": {jsonrpc.CodeInternalError, "the mailer crashed after sending", `{"sent":true}`},
				"own_code":       {-31000, "quota exceeded midway", ""},
			} {
				res, err := call(t, c, tool, name, `{}`)
				if err != nil {
					t.Fatalf("sdk=%v stateless=%v %s: err = %v, want an error result", sdk, stateless, name, err)
				}
				var p struct {
					Error   string          `json:"error"`
					Code    *int64          `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				}
				if e := json.Unmarshal(res.Content, &p); e != nil || !res.IsError || p.Error != "mcp_error" ||
					p.Code == nil || *p.Code != want.code || p.Message != want.msg || string(p.Data) != want.data {
					t.Errorf("sdk=%v stateless=%v %s: result = %v %s", sdk, stateless, name, res.IsError, res.Content)
				}
				if n := fs.runs[name].Load(); n != 1 {
					t.Errorf("sdk=%v stateless=%v %s ran %d times, want 1", sdk, stateless, name, n)
				}
			}
			_, err := call(t, c, tool, "invalid_params", `{}`)
			wantKind(t, err, connectors.KindRejected)
		}
	}
}
