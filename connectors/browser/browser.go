// Package browser is the connector of the builtin browser tool: fetch_page
// GETs a web page and returns it as an agent reads it (final URL, status,
// title, readable text, absolute links). It owns fetching and reading HTML;
// it must never run scripts, send credentials, cookies or a Referer, or
// reach loopback, link-local or private addresses unless the operator
// allowed them (every dial, redirects included, goes through
// internal/egress).
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBytes     = 5 << 20
	DefaultMaxRedirects = 10
	userAgent           = "QuiverBrowser/1.0 (+https://github.com/quiverhq/quiver)"
)

// Options configures a Connector.
type Options struct {
	// AllowPrivate permits pages on loopback, link-local and private
	// addresses (QUIVER_EGRESS_ALLOW_PRIVATE).
	AllowPrivate bool
	// Timeout bounds one fetch, redirects included; zero means
	// DefaultTimeout. The call's context may end it sooner.
	Timeout time.Duration
	// MaxBytes is how much of a page is read; the rest is ignored and the
	// page is marked truncated. Zero means DefaultMaxBytes.
	MaxBytes int64
}

// Connector fetches pages. It is safe for concurrent use.
type Connector struct {
	client   *http.Client
	guard    egress.Options
	timeout  time.Duration
	maxBytes int64
}

var _ connectors.Connector = (*Connector)(nil)

// errRedirect marks a redirect the connector refuses to follow.
type errRedirect struct{ reason string }

func (e *errRedirect) Error() string { return e.reason }

// New returns a Connector.
func New(opts Options) *Connector {
	c := &Connector{guard: egress.Options{AllowPrivate: opts.AllowPrivate},
		timeout: opts.Timeout, maxBytes: opts.MaxBytes}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	c.client = &http.Client{
		Transport: egress.Transport(c.guard),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// The client names the page redirected from, whose query may
			// carry a token, to the next one, which may be another site.
			req.Header.Del("Referer")
			// Nor does it log in where a page sends it: net/http would send
			// a redirect URL's user information as Basic authorization, and
			// the page's url would show it.
			req.URL.User = nil
			// A Location's query is escaped as the page's own url's is
			// (EscapeQuery).
			req.URL.RawQuery = connectors.EscapeQuery(req.URL.RawQuery)
			if len(via) >= DefaultMaxRedirects {
				return &errRedirect{fmt.Sprintf("stopped after %d redirects", DefaultMaxRedirects)}
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return &errRedirect{fmt.Sprintf("redirect to a %s: URL refused", req.URL.Scheme)}
			}
			if egress.CheckLiteral(req.URL.Hostname(), c.guard) != nil {
				return &errRedirect{redirectInside(req.URL.Hostname())}
			}
			return nil
		},
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

// Page is the result of fetch_page.
type Page struct {
	URL         string `json:"url"` // after redirects
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Title       string `json:"title"`
	Text        string `json:"text"`
	// Truncated is set when the page or its text was cut to the limits.
	Truncated bool   `json:"truncated,omitempty"`
	Links     []Link `json:"links"`
}

// Link is one hyperlink of a page.
type Link struct {
	Text string `json:"text"`
	Href string `json:"href"` // absolute
}

// Call runs fetch_page. A page with status >= 400 is a tool error with the
// same shape: the server answered, so the outcome is known.
func (c *Connector) Call(ctx context.Context, _ *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	if action != "fetch_page" {
		return connectors.Result{}, connectors.Errorf(connectors.KindUnknownAction, nil, "browser has no action %q", action)
	}
	var in struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindRejected, nil, "arguments must be an object with a url")
	}
	target, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return connectors.Result{}, badURL("url must be an absolute http:// or https:// URL")
	}
	if target.User != nil {
		// net/http would send it as Basic authorization, and the page's
		// url, kept and replayed with the result, would show it.
		return connectors.Result{}, badURL("url must not carry user information (user:password@); the browser sends no credentials")
	}
	target.Fragment = ""
	target.RawQuery = connectors.EscapeQuery(target.RawQuery)
	// A literal address the guard refuses is a bad argument, known before
	// any dial; a name is checked where it is dialled, as it may resolve
	// elsewhere by then, and so are redirects.
	if egress.CheckLiteral(target.Hostname(), c.guard) != nil {
		return connectors.Result{}, badURL(
			"url names %s, a loopback, link-local, private or reserved address, or one of this host's own, which Quiver may not reach", target.Hostname())
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	page, err := c.fetch(ctx, target)
	if err != nil {
		return connectors.Result{}, err
	}
	content, err := encode(page)
	if err != nil {
		return connectors.Result{}, connectors.Errorf(connectors.KindOutcomeUnknown, err, "cannot encode the page")
	}
	return connectors.Result{Content: content, IsError: page.Status >= 400}, nil
}

// encode is page as JSON, with <, > and & as themselves: escaped, each
// takes six bytes, and a page of them (a link's query is full of &) could
// grow past the 8 MiB a call's result may hold.
func encode(page *Page) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(page); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (c *Connector) fetch(ctx context.Context, target *url.URL) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, connectors.Errorf(connectors.KindRejected, err, "cannot build the request")
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5")
	// Whether the last attempt (a redirect's, say) was still looking for a
	// connection when the fetch failed: then nothing reached its server.
	// Send's own trace knows only that some attempt got one.
	var connecting atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GetConn: func(string) { connecting.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { connecting.Store(false) },
	}))
	resp, err := connectors.Send(c.client, req)
	if err != nil {
		var redirect *errRedirect
		if errors.As(err, &redirect) {
			return nil, badURL("%s", redirect.reason)
		}
		if egress.IsBlocked(err) && connectors.KindOf(err) == connectors.KindOutcomeUnknown {
			// A hop was connected and a later one refused by the guard: a
			// redirect to a name that resolves inside. The page is not
			// fetched, which is an answer, not a lost one (504): the
			// redirect is refused as a literal address's is.
			var b *egress.BlockedError
			errors.As(err, &b)
			return nil, badURL("%s", redirectInside(b.Addr.String()))
		}
		if (connecting.Load() || egress.IsConnectFailure(err)) && connectors.KindOf(err) == connectors.KindOutcomeUnknown {
			// A redirect led to a server no connection could be made to
			// (refused, DNS, a TLS handshake that failed or never ended).
			// The page was not fetched, and what was sent before were GETs,
			// which changed nothing: unreachable, so a key is released for
			// a retry rather than held terminal.
			return nil, connectors.Errorf(connectors.KindUnreachable, errors.Unwrap(err), "the page's server could not be reached")
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, connectors.HTTPFailure(err)
	}
	page := &Page{URL: resp.Request.URL.String(), Status: resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"), Links: []Link{}}
	if int64(len(data)) > c.maxBytes {
		data, page.Truncated = data[:c.maxBytes], true
	}
	mediaType, _, _ := mime.ParseMediaType(page.ContentType)
	if page.ContentType == "" {
		// Untyped: read as HTML, as before, unless its bytes say it is
		// not text (an image, an archive). content_type stays as the
		// server sent it.
		if sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(data)); !strings.HasPrefix(sniffed, "text/") {
			mediaType = sniffed
		}
	}
	switch {
	case mediaType == "" || mediaType == "text/html" || mediaType == "application/xhtml+xml":
		doc := readHTML(data, page.ContentType, resp.Request.URL)
		page.Title, page.Text, page.Links = doc.title, doc.text, doc.links
		page.Truncated = page.Truncated || doc.truncated
	case strings.HasPrefix(mediaType, "text/") || strings.HasSuffix(mediaType, "json") || strings.HasSuffix(mediaType, "xml"):
		text, cut := capText(toUTF8(data, page.ContentType), maxTextRunes)
		page.Text, page.Truncated = text, page.Truncated || cut
	default:
		// Binary content (images, PDFs, archives): report it, read nothing.
	}
	return page, nil
}

// badURL is a refusal of fetch_page's url argument (422 invalid_arguments
// with fields.url): nothing was fetched.
func badURL(format string, args ...any) *connectors.Error {
	e := connectors.Errorf(connectors.KindRejected, nil, format, args...)
	e.Argument = "url"
	return e
}

// redirectInside is the refusal of a redirect to host, an address the
// egress guard refuses.
func redirectInside(host string) string {
	return fmt.Sprintf("redirect to %s, a loopback, link-local, private or reserved address, or one of this host's own, which Quiver may not reach: refused", host)
}
