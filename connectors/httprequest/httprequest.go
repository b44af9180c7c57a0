// Package httprequest is the connector of the builtin http-request tool: it
// sends GET, HEAD, PUT, DELETE, POST and PATCH requests to paths under the
// base URL the user configured, with the configured authentication, and
// returns status, headers and body. It owns keeping every request under that
// base URL; it must never log the token, follow redirects (they could carry
// the credentials elsewhere), retry a request, or reach loopback, link-local
// or private addresses unless the operator allowed them.
package httprequest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// DefaultMaxResponseBytes is how much of a response body is kept by default.
const DefaultMaxResponseBytes = 8 << 20

// Configuration keys of the http-request catalog entry.
const (
	ConfigBaseURL    = "base_url"
	ConfigAuthType   = "auth_type"
	ConfigToken      = "token"
	ConfigHeaderName = "header_name"
)

// The values of ConfigAuthType.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthHeader = "header"
)

const userAgent = "Quiver-HTTP-Request/1.0"

// Options configures a Connector.
type Options struct {
	// AllowPrivate permits base URLs on loopback, link-local and private
	// addresses (QUIVER_EGRESS_ALLOW_PRIVATE).
	AllowPrivate bool
	// MaxResponseBytes bounds a response body; a larger one makes the call a
	// tool error "response_too_large". Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds one request when positive; otherwise the call's
	// context alone does.
	Timeout time.Duration
	// IdleTimeout is how long a connection to a tool's server may idle and
	// still be reused; zero means egress.DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Connector sends HTTP requests. It is safe for concurrent use.
type Connector struct {
	client   *http.Client
	guard    egress.Options // what Verify checks a base_url's host against
	maxBytes int64
	timeout  time.Duration
}

var _ connectors.Connector = (*Connector)(nil)

// New returns a Connector.
func New(opts Options) *Connector {
	c := &Connector{guard: egress.Options{AllowPrivate: opts.AllowPrivate, IdleTimeout: opts.IdleTimeout},
		maxBytes: opts.MaxResponseBytes, timeout: opts.Timeout}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxResponseBytes
	}
	c.client = &http.Client{
		Transport: egress.Transport(c.guard),
		// A redirect is answered as is: following it could send the
		// configured credentials to another host, or re-send a POST.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Actions returns the actions of the tool's catalog entry.
func (c *Connector) Actions(_ context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return connectors.EntryActions(t.Entry), nil
}

// CachedActions implements connectors.ActionsAtHand: the catalog's actions
// are always at hand.
func (c *Connector) CachedActions(t *connectors.Tool) ([]connectors.Action, bool) {
	return connectors.EntryActions(t.Entry), true
}

// Response is the result of every action. A status >= 400 makes the result
// a tool error with this same shape.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	// Body is the parsed JSON when the response is JSON, else its text
	// (base64 when it is not UTF-8, with BodyEncoding "base64").
	Body         any    `json:"body"`
	BodyEncoding string `json:"body_encoding,omitempty"`
	// Error is "response_too_large" when the body was over the limit and
	// was not kept; Message then says so in words.
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

// args are an action's arguments.
type args struct {
	Path    string                     `json:"path"`
	Query   map[string]json.RawMessage `json:"query"`
	Headers map[string]json.RawMessage `json:"headers"`
	Body    json.RawMessage            `json:"body"`
}

// method maps an action to its HTTP method.
func method(action string) (string, bool) {
	switch action {
	case "get":
		return http.MethodGet, true
	case "head":
		return http.MethodHead, true
	case "put":
		return http.MethodPut, true
	case "delete":
		return http.MethodDelete, true
	case "post":
		return http.MethodPost, true
	case "patch":
		return http.MethodPatch, true
	}
	return "", false
}

// Call sends one request. Everything is checked before anything is sent, so
// a refused call never reaches the server.
func (c *Connector) Call(ctx context.Context, t *connectors.Tool, action string, raw json.RawMessage) (connectors.Result, error) {
	m, ok := method(action)
	if !ok {
		return connectors.Result{}, connectors.Errorf(connectors.KindUnknownAction, nil, "http-request has no action %q", action)
	}
	var in args
	if err := json.Unmarshal(raw, &in); err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil, "arguments must be an object with a path")
	}
	req, err := build(ctx, m, t.Config, &in)
	if err != nil {
		return connectors.Result{}, err
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
		req = req.WithContext(ctx)
	}
	resp, err := connectors.Send(c.client, req)
	if err != nil {
		return connectors.Result{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return connectors.Result{}, connectors.HTTPFailure(err)
	}
	out := Response{Status: resp.StatusCode, Headers: flatten(resp.Header)}
	isError := resp.StatusCode >= 400
	if int64(len(data)) > c.maxBytes {
		out.Error, isError = "response_too_large", true
		out.Message = fmt.Sprintf("The response body was larger than %d bytes, the most http-request reads of one (decompressed); it was not kept.", c.maxBytes)
		data = nil
	}
	// Masked as the caller will read it: a token echoed in UTF-16, say,
	// is only the token's bytes once decoded.
	mediaType, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	data = hideToken(t.Config, out.Headers, inUTF8(data, params["charset"]))
	if out.Error == "" {
		out.Body, out.BodyEncoding = decodeBody(data, mediaType)
	}
	content, err := json.Marshal(out)
	if err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindOutcomeUnknown, err, "cannot encode the response")
	}
	return connectors.Result{Content: content, IsError: isError}, nil
}

// minHiddenToken is the shortest token masked in a server's answer: a
// shorter one would garble the words around it more than it hides.
const minHiddenToken = 4

// hideToken masks the configured token where the server quoted it back, in
// the headers (in place) and in data, which it returns. Secrets are never
// returned: an echo endpoint (httpbin's /headers) or a 401 naming the token
// would otherwise hand it to whoever calls the tool, a read-only key
// included, and to every replay of the call. A JSON body may carry it
// escaped, so its JSON-escaped forms are masked too, and a JSON body stays
// JSON (MaskJSON). An answer without the token is only scanned, not
// copied.
func hideToken(config map[string]string, headers map[string]string, data []byte) []byte {
	token := config[ConfigToken]
	if config[ConfigAuthType] == "none" || len(token) < minHiddenToken {
		return data
	}
	echo := connectors.NewEcho(minHiddenToken, token)
	found := echo.Quotes(data)
	for _, v := range headers {
		found = found || echo.QuotedIn(v)
	}
	if !found {
		return data
	}
	m := echo.Masker()
	for name, v := range headers {
		headers[name] = m.Mask(v)
	}
	return echo.MaskJSON(data)
}

// body returns the request body and its default content type: a JSON string
// is sent as its text, any other JSON value as JSON.
func body(raw json.RawMessage) (io.Reader, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", err
		}
		return bytes.NewReader([]byte(s)), "text/plain; charset=utf-8", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, "", err
	}
	return &buf, "application/json", nil
}
