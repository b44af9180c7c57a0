package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// closedURL returns the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	return "http://" + connectortest.ClosedAddr(t) + "/mcp"
}

func wantField(t *testing.T, err error, field, contains string) {
	t.Helper()
	var fe *connectors.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *connectors.FieldError", err, err)
	}
	if fe.Field != field {
		t.Errorf("field = %q, want %q (message %q)", fe.Field, field, fe.Message)
	}
	if !strings.Contains(fe.Message, contains) {
		t.Errorf("message = %q, want it to contain %q", fe.Message, contains)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	inbox := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
	mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{Stateless: true})
	oauth := mcptest.Start(t, mcptest.Mail, mcptest.Options{RequireBearer: "tok",
		ResourceMetadata: "https://mail.example/.well-known/oauth-protected-resource"})
	c := setup(t, nil)
	guarded := setup(t, &Options{AllowPrivate: false})
	ctx := ctxFor(t, 20*time.Second)

	t.Run("ok", func(t *testing.T) {
		if err := c.Verify(ctx, customEntry, map[string]string{"url": mail.URL}); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL, "bearer_token": mcptest.InboxKey}); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL,
			"headers": `{"X-Api-Key":"` + mcptest.InboxKey + `"}`}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing or malformed url", func(t *testing.T) {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{}), "url", "required")
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": "ftp://x/mcp"}), "url", "http")
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": "http://u:p@x/mcp"}), "url", "password")
	})
	t.Run("authorization twice", func(t *testing.T) {
		before := inbox.Requests()
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL, "bearer_token": mcptest.InboxKey,
			"headers": `{"authorization":"Bearer other"}`}), "headers", "bearer_token")
		if inbox.Requests() != before {
			t.Error("verify reached the server with a configuration it refuses")
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": closedURL(t)}), "url", "connection refused")
	})
	t.Run("egress guard", func(t *testing.T) {
		before := mail.Requests()
		wantField(t, guarded.Verify(ctx, customEntry, map[string]string{"url": mail.URL}), "url", "private or reserved address")
		if mail.Requests() != before {
			t.Error("the guarded verify reached the server")
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL, "bearer_token": "nope"}),
			"bearer_token", "doesn't check out")
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL, "headers": `{"X-Api-Key":"nope"}`}),
			"headers", "doesn't check out")
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": inbox.URL}), "bearer_token", "requires credentials")
		// A server that says no more than an OAuth error code gets a
		// sentence around it.
		coded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_token"}`)
		}))
		defer coded.Close()
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": coded.URL, "bearer_token": "nope"}),
			"bearer_token", "The server refused these credentials (HTTP 401): invalid_token.")
	})
	t.Run("bad headers", func(t *testing.T) {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": mail.URL, "headers": `[1]`}), "headers", "JSON object")
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": mail.URL, "headers": `{"Host":"x"}`}), "headers", "cannot be set")
	})
	t.Run("oauth required", func(t *testing.T) {
		err := c.Verify(ctx, customEntry, map[string]string{"url": oauth.URL})
		var oe *OAuthRequiredError
		if !errors.As(err, &oe) {
			t.Fatalf("error = %v (%T), want *OAuthRequiredError", err, err)
		}
		if oe.ResourceMetadataURL != "https://mail.example/.well-known/oauth-protected-resource" {
			t.Errorf("resource metadata = %q", oe.ResourceMetadataURL)
		}
		// With a token given, a refusal is the token's fault.
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": oauth.URL, "bearer_token": "bad"}), "bearer_token", "")
		if err := c.Verify(ctx, customEntry, map[string]string{"url": oauth.URL, "bearer_token": "tok"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("oauth maybe, metadata not named", func(t *testing.T) {
		// A 401 without resource_metadata, to a request without
		// credentials: the metadata may be at the well-known URIs, and
		// the refusal it unwraps to is the answer when it is not.
		for name, challenge := range map[string]string{"none": "", "bare": "Bearer", "realm": `Bearer realm="mail", scope="read write"`} {
			bare := interceptedServer(t, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
				if challenge != "" {
					w.Header().Set("WWW-Authenticate", challenge)
				}
				w.WriteHeader(http.StatusUnauthorized)
			})
			err := c.Verify(ctx, customEntry, map[string]string{"url": bare.URL + "/mcp"})
			var oe *OAuthRequiredError
			if !errors.As(err, &oe) || oe.ResourceMetadataURL != "" || oe.Refusal == nil {
				t.Fatalf("%s: error = %v (%T), want an *OAuthRequiredError with a refusal and no metadata URL", name, err, err)
			}
			if want := map[string]string{"realm": "read write"}[name]; oe.Scope != want {
				t.Errorf("%s: scope = %q, want %q", name, oe.Scope, want)
			}
			wantField(t, err, "bearer_token", "The server requires credentials (HTTP 401).")
			// With a token given, a refusal is the token's alone.
			err = c.Verify(ctx, customEntry, map[string]string{"url": bare.URL + "/mcp", "bearer_token": "bad"})
			if errors.As(err, &oe) {
				t.Errorf("%s: a refused token is an *OAuthRequiredError", name)
			}
			wantField(t, err, "bearer_token", "refused these credentials")
		}
		// A 403 is a refusal, not a question of OAuth.
		forbidden := interceptedServer(t, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusForbidden)
		})
		var oe *OAuthRequiredError
		if err := c.Verify(ctx, customEntry, map[string]string{"url": forbidden.URL + "/mcp"}); errors.As(err, &oe) {
			t.Errorf("a 403 is an *OAuthRequiredError")
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		// Not the URL's fault: the field says to send it again, and when.
		limited := interceptedServer(t, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			w.Header().Set("Retry-After", "20")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"rate_limited","message":"Slow down."}`)
		})
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": limited.URL + "/mcp"}), "url",
			"The server is limiting requests (HTTP 429: Slow down.); nothing is wrong with this configuration, so send it again in 20s.")
	})
	t.Run("older HTTP+SSE transport", func(t *testing.T) {
		// The Go SDK's SSE server: its stream URL is named as such, and
		// not taken for a wrong URL.
		legacy := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server {
			return mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
		}, nil))
		t.Cleanup(func() {
			legacy.CloseClientConnections()
			legacy.Close()
		})
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": legacy.URL + "/sse"}), "url", "older HTTP+SSE transport")
		// Another server refusing the POST is still asked whether it is
		// the MCP endpoint.
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": strings.TrimSuffix(mail.URL, "/mcp") + "/nothing/here"}), "url", "is this the MCP endpoint?")
	})
	t.Run("not an MCP endpoint", func(t *testing.T) {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": strings.TrimSuffix(mail.URL, "/mcp") + "/nothing/here"}), "url", "")
	})
	t.Run("no tools", func(t *testing.T) {
		// A server offering resources only, as the TypeScript SDK's does:
		// no tools capability, and tools/list not a method it has. It did
		// answer as an MCP server.
		noTools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.NewDecoder(r.Body).Decode(&m)
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method != http.MethodPost:
				w.WriteHeader(http.StatusMethodNotAllowed)
			case m.Method == "initialize":
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"resources":{}},"serverInfo":{"name":"docs","version":"1"}}}`, m.ID)
			case m.Method == "tools/list":
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
			default:
				w.WriteHeader(http.StatusAccepted)
			}
		}))
		defer noTools.Close()
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": noTools.URL}), "url", "offers no tools")
	})
	t.Run("hosted entry", func(t *testing.T) {
		hosted := &catalog.Entry{Name: "mail", Type: catalog.TypeMCP, Connector: "mcp", MCPURL: closedURL(t)}
		err := c.Verify(ctx, hosted, map[string]string{"url": mail.URL})
		wantKind(t, err, connectors.KindUnreachable)
	})
}

func TestAuthParams(t *testing.T) {
	t.Parallel()
	got := authParams(`Bearer realm="mcp", error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write"`)
	if got["resource_metadata"] != "https://a.example/.well-known/oauth-protected-resource/mcp" || got["scope"] != "read write" || got["realm"] != "mcp" {
		t.Errorf("authParams = %v", got)
	}
	if got := authParams(`Bearer resource_metadata=https://b.example/m`); got["resource_metadata"] != "https://b.example/m" {
		t.Errorf("authParams token form = %v", got)
	}
}
