package oauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"
)

// The MCP authorization spec asks a client to name the RFC 8707 resource in
// every token request, a refresh's included. oauth2.Config.TokenSource
// takes no parameters of the caller's, so a refresh of a provider with a
// resource goes through resourceTransport, which adds it to the form of a
// refresh_token grant sent to the provider's token endpoint, and to nothing
// else.

// refreshCtx is clientCtx for a refresh with p.
func (f *Flow) refreshCtx(ctx context.Context, p *provider) context.Context {
	if p.resource == "" {
		return f.clientCtx(ctx)
	}
	c := *f.opts.HTTPClient
	c.Transport = &resourceTransport{base: c.Transport, tokenURL: p.cfg.Endpoint.TokenURL, resource: p.resource}
	return context.WithValue(ctx, oauth2.HTTPClient, &c)
}

// resourceTransport adds resource to the refresh_token grants it carries to
// tokenURL.
type resourceTransport struct {
	base     http.RoundTripper // nil: http.DefaultTransport
	tokenURL string
	resource string
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || req.Body == nil || !sameEndpoint(req.URL, t.tokenURL) {
		return base.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(b)); err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", t.resource)
		b = []byte(form.Encode())
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return base.RoundTrip(out)
}

// sameEndpoint reports whether u is the endpoint named by raw, its query
// aside.
func sameEndpoint(u *url.URL, raw string) bool {
	e, err := url.Parse(raw)
	return err == nil && u.Scheme == e.Scheme && u.Host == e.Host && u.Path == e.Path
}
