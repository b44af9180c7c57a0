// Package tavily is the connector of the builtin tavily tool: it calls
// Tavily's REST API (POST /search and /extract) with the account's API key.
// It owns the mapping of Tavily's answers onto connector results and error
// kinds; it must never log the API key or the request arguments, and never
// retry a request on its own.
package tavily

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// DefaultBaseURL is Tavily's own API.
const DefaultBaseURL = "https://api.tavily.com"

// ConfigKey is the configuration field that holds the API key.
const ConfigKey = "TAVILY_API_KEY"

// maxResponseBytes bounds what is read of a Tavily answer.
const maxResponseBytes = 8 << 20

// Options configures a Connector. The zero value reaches Tavily itself.
type Options struct {
	// BaseURL is the API's base URL (QUIVER_TAVILY_BASE_URL); empty means
	// DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil means a client of its own. Calls
	// are bounded by their context, not by a client timeout.
	HTTPClient *http.Client
}

// Connector calls Tavily. It is safe for concurrent use.
type Connector struct {
	baseURL string
	client  *http.Client
}

var _ connectors.Connector = (*Connector)(nil)

// endpoint returns the path of an action and the arguments passed through.
func endpoint(action string) (path string, args []string, ok bool) {
	switch action {
	case "search":
		return "/search", []string{"query", "max_results", "search_depth", "topic"}, true
	case "extract":
		return "/extract", []string{"urls"}, true
	}
	return "", nil, false
}

// New returns a Connector.
func New(opts Options) *Connector {
	base := strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	client := opts.HTTPClient
	if client == nil {
		// Not net/http's 90 s: a POST written into a connection Tavily's
		// side is closing is lost unread (egress.DefaultIdleTimeout).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.IdleConnTimeout = egress.DefaultIdleTimeout
		client = &http.Client{Transport: tr, CheckRedirect: noRedirects}
	}
	return &Connector{baseURL: base, client: client}
}

// noRedirects answers a redirect as is. The base URL is the operator's and
// is dialled without the egress guard; where a redirect points is the
// answering server's choice, which the guard would never see (a 302 to
// 169.254.169.254 would have its answer handed to the caller), and a 307
// would re-send the search elsewhere. Tavily's API does not redirect.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Actions returns the actions of the tool's catalog entry.
func (c *Connector) Actions(_ context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return connectors.EntryActions(t.Entry), nil
}

// CachedActions implements connectors.ActionsAtHand: the catalog's actions
// are always at hand.
func (c *Connector) CachedActions(t *connectors.Tool) ([]connectors.Action, bool) {
	return connectors.EntryActions(t.Entry), true
}

// Call runs search or extract.
func (c *Connector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	path, names, ok := endpoint(action)
	if !ok {
		return connectors.Result{}, connectors.Errorf(connectors.KindUnknownAction, nil, "tavily has no action %q", action)
	}
	key := t.Config[ConfigKey]
	if key == "" {
		return connectors.Result{}, connectors.Errorf(connectors.KindUpstreamAuth, nil, "no Tavily API key is configured")
	}
	if !httpguts.ValidHeaderFieldValue(key) {
		// Stored before such keys were refused at configuration, say: it
		// cannot be sent, so nothing was, and a reconfigured tool may retry.
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil,
			"the Tavily API key holds a line break or control character, which no HTTP header can carry; nothing was sent; reconfigure the key")
	}
	var in map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil, "arguments must be a JSON object")
		}
	}
	// Only the documented arguments go through, as their literal JSON.
	out := make(map[string]json.RawMessage, len(names))
	for _, name := range names {
		if v, ok := in[name]; ok && string(v) != "null" {
			out[name] = v
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, err, "arguments cannot be encoded")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, err, "cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)

	resp, err := connectors.Send(c.client, req)
	if err != nil {
		return connectors.Result{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return connectors.Result{}, connectors.HTTPFailure(err)
	}
	return answer(path, resp.StatusCode, resp.Header, data, key)
}

// minHiddenKey is the shortest key masked in Tavily's words: a shorter one
// (tvly-) would garble the message and hides nothing.
const minHiddenKey = 6

// hide masks key in Tavily's words. Tavily may quote the key it was sent in
// a refusal or failure, or a server answering at its URL in a 2xx that is
// not JSON: each is masked before it becomes an error's message or a tool
// error result's body. A successful JSON answer is the search's result and
// is passed on as it is, unscanned.
func hide(data []byte, key string) []byte {
	m := connectors.NewMasker(minHiddenKey, key)
	return []byte(m.Mask(string(data)))
}

// Tavily's own statuses for a key over its limits (beside 429, a rate
// limit): the plan's usage limit, and the pay-as-you-go spending limit.
const (
	statusPlanLimit  = 432
	statusPayGoLimit = 433
)

// answer maps Tavily's status, headers and body, answering a POST of path
// with key, onto a result or a typed error.
func answer(path string, status int, header http.Header, data []byte, key string) (connectors.Result, error) {
	if status < 200 || status > 299 {
		data = hide(data, key)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return connectors.Result{}, connectors.Errorf(connectors.KindUpstreamAuth, nil,
			"Tavily refused the API key (%d): %s", status, message(data))
	case status == http.StatusTooManyRequests:
		// Refused before running: retrying after Tavily's delay may work.
		e := connectors.Errorf(connectors.KindUpstreamLimited, nil,
			"Tavily rate limited the request (429): %s", message(data))
		e.RetryAfter = connectors.RetryAfter(header.Get("Retry-After"), time.Now())
		return connectors.Result{}, e
	case status == statusPlanLimit || status == statusPayGoLimit:
		// Refused before running too, but the key's plan or spending limit
		// is used up, so no retry soon will succeed. It is still a limit,
		// not a broken tool: the same kind (429 rate_limited, telling an
		// agent to stop), rather than a 502 tool_unreachable that would
		// invite a retry. No RetryAfter, and the message names the limit
		// so that a person raises it.
		limit := "plan's usage limit"
		if status == statusPayGoLimit {
			limit = "pay-as-you-go limit"
		}
		return connectors.Result{}, connectors.Errorf(connectors.KindUpstreamLimited, nil,
			"the Tavily %s was reached (%d), so retrying will not help until it resets or is raised: %s", limit, status, message(data))
	case status >= 500:
		return errorResult(status, data), nil
	case status >= 300 && status < 400:
		// Not followed (noRedirects): the base URL moved, or what answers
		// there is not Tavily's API.
		return connectors.Result{}, connectors.Errorf(connectors.KindUpstreamRefused, nil,
			"Tavily answered POST %s with a redirect (%d), which Quiver does not follow; check QUIVER_TAVILY_BASE_URL", path, status)
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		// No such endpoint: the base URL (QUIVER_TAVILY_BASE_URL) or the
		// API moved, not the caller's arguments.
		return connectors.Result{}, connectors.Errorf(connectors.KindUpstreamRefused, nil,
			"Tavily has no POST %s at its base URL (%d), which QUIVER_TAVILY_BASE_URL sets: %s", path, status, message(data))
	case status >= 400:
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil,
			"Tavily rejected the request (%d): %s", status, message(data))
	case status < 200 || status >= 300:
		return errorResult(status, data), nil
	}
	if len(data) > maxResponseBytes {
		// The search ran and this is its outcome: an error result, as
		// every connector reports an answer over its limit.
		r := jsonResult(map[string]string{"error": "result_too_large",
			"message": fmt.Sprintf("Tavily's answer is larger than %d bytes.", maxResponseBytes)})
		r.IsError = true
		return r, nil
	}
	if !json.Valid(data) {
		return errorResult(status, hide(data, key)), nil
	}
	return connectors.Result{Content: json.RawMessage(data)}, nil
}

// errorResult is a tool error carrying the status and Tavily's body (parsed
// when it is JSON).
func errorResult(status int, data []byte) connectors.Result {
	if len(data) > maxResponseBytes {
		data = data[:maxResponseBytes]
	}
	var body any = string(data)
	if json.Valid(data) {
		body = json.RawMessage(data)
	}
	r := jsonResult(map[string]any{"status": status, "error": body})
	r.IsError = true
	return r
}

func jsonResult(v any) connectors.Result {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value passed here is encodable; keep a valid result anyway.
		data = []byte(`{"error":"unencodable_result"}`)
	}
	return connectors.Result{Content: data}
}

// message extracts Tavily's error text: {"detail": {"error": "..."}},
// {"detail": "..."} or {"error": "..."}; else the body itself, shortened.
func message(data []byte) string {
	var v struct {
		Detail json.RawMessage `json:"detail"`
		Error  string          `json:"error"`
	}
	if json.Unmarshal(data, &v) == nil {
		var d struct {
			Error string `json:"error"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Detail, &d) == nil && d.Error != "":
			return d.Error
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return s
		case v.Error != "":
			return v.Error
		}
	}
	text := connectors.Clip(string(data), 300)
	if text == "" {
		return "no details"
	}
	return text
}
