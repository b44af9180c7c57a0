package httprequest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/jsondepth"
)

func rejected(format string, a ...any) *connectors.Error {
	return connectors.Errorf(connectors.KindRejected, nil, format, a...)
}

// refused is rejected for the argument arg.
func refused(arg, format string, a ...any) *connectors.Error {
	e := rejected(format, a...)
	e.Argument = arg
	return e
}

// build checks the configuration and arguments and makes the request.
func build(ctx context.Context, m string, config map[string]string, in *args) (*http.Request, error) {
	base, err := url.Parse(config[ConfigBaseURL])
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, rejected("the tool's base_url is not an http:// or https:// URL; reconfigure it")
	}
	target, err := join(base, in.Path)
	if err != nil {
		return nil, err
	}
	extra, err := queryValues(in.Query)
	if err != nil {
		return nil, err
	}
	target.RawQuery = joinQueries(target.RawQuery, extra.Encode())

	if m == http.MethodHead && len(in.Body) > 0 && string(in.Body) != "null" {
		return nil, refused("body", "a head request has no body")
	}
	reader, contentType, err := body(in.Body)
	if err != nil {
		return nil, refused("body", "body is not valid JSON")
	}
	req, err := http.NewRequestWithContext(ctx, m, target.String(), reader)
	if err != nil {
		return nil, rejected("cannot build the request: %v", err)
	}
	req.Header.Set("User-Agent", userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if err := setHeaders(req.Header, in.Headers); err != nil {
		return nil, err
	}
	if err := authenticate(req.Header, config); err != nil {
		return nil, err
	}
	return req, nil
}

// join puts path under base. A path that names a scheme or host, or climbs
// out of the base with "..", is refused: requests never leave base_url.
func join(base *url.URL, path string) (*url.URL, error) {
	if strings.HasPrefix(path, "//") || strings.HasPrefix(path, `\\`) || strings.HasPrefix(path, `/\`) {
		return nil, refused("path", "path must be relative to the base URL, not name a host")
	}
	rel, err := url.Parse(path)
	if err != nil {
		return nil, refused("path", "path is not a valid URL path: %v", err)
	}
	if rel.Scheme != "" || rel.Host != "" || rel.User != nil || rel.Opaque != "" {
		return nil, refused("path", "path must be relative to the base URL; absolute URLs are refused")
	}
	if climbs(rel.Path) {
		return nil, refused("path", `path cannot contain ".." segments`)
	}
	out := *base
	out.Fragment, out.RawFragment = "", ""
	out.RawQuery = joinQueries(connectors.EscapeQuery(base.RawQuery), connectors.EscapeQuery(rel.RawQuery))
	if rel.Path != "" {
		escaped := strings.TrimSuffix(base.EscapedPath(), "/") + "/" + strings.TrimPrefix(rel.EscapedPath(), "/")
		p, err := url.PathUnescape(escaped)
		if err != nil {
			return nil, refused("path", "path is not a valid URL path: %v", err)
		}
		out.Path, out.RawPath = p, escaped
		if out.EscapedPath() != escaped {
			out.RawPath = ""
		}
	}
	if out.Scheme != base.Scheme || out.Host != base.Host {
		return nil, refused("path", "path must stay under the base URL")
	}
	return &out, nil
}

// climbs reports whether a decoded path has a segment some server reads as
// "..": ".." itself, or followed by ";" (Tomcat and Jetty take the rest
// for the segment's parameters), or between backslashes (IIS takes "\"
// for "/").
func climbs(path string) bool {
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg, _, _ = strings.Cut(seg, ";"); seg == ".." {
			return true
		}
	}
	return false
}

func joinQueries(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// queryValues turns {name: value} into query values; a value may be a
// string, number or boolean, or a list of them for a repeated parameter.
func queryValues(q map[string]json.RawMessage) (url.Values, error) {
	out := url.Values{}
	for name, raw := range q {
		if v, ok := scalar(raw); ok {
			out.Add(name, v)
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return nil, refused("query", "query parameter %q must be a string, number or boolean, or a list of them", name)
		}
		for _, item := range list {
			v, ok := scalar(item)
			if !ok {
				return nil, refused("query", "query parameter %q must be a string, number or boolean, or a list of them", name)
			}
			out.Add(name, v)
		}
	}
	return out, nil
}

// scalar returns a JSON string's value, or a number's or boolean's text.
func scalar(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return string(raw), true
	}
	return "", false
}

// reserved reports whether a canonical header name is managed by the HTTP
// client and cannot be set by arguments or configuration. Accept-Encoding
// is among them: setting it turns off the client's transparent gzip
// decoding, and the body would come back as base64 of compressed bytes.
func reserved(canonical string) bool {
	switch canonical {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
		"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Upgrade",
		"Accept-Encoding":
		return true
	}
	return false
}

func setHeaders(h http.Header, in map[string]json.RawMessage) error {
	given := make(map[string]bool, len(in))
	for name, raw := range in {
		if !httpguts.ValidHeaderFieldName(name) {
			return refused("headers", "header name %q is not valid", name)
		}
		canonical := http.CanonicalHeaderKey(name)
		if given[canonical] {
			// Which of them would be sent would depend on map order.
			return refused("headers", "header %q is given twice (header names are case-insensitive)", canonical)
		}
		given[canonical] = true
		if reserved(canonical) {
			return refused("headers", "header %q is managed by Quiver and cannot be set", canonical)
		}
		v, ok := scalar(raw)
		if !ok {
			return refused("headers", "header %q must be a string, number or boolean", canonical)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return refused("headers", "header %q must be one line without control characters (CR, LF, NUL and the like)", canonical)
		}
		h.Set(canonical, v)
	}
	return nil
}

// authenticate adds the configured credentials; they override any header
// of the same name from the arguments. A token no header can carry (a line
// break or a control character, from a configuration stored before such
// tokens were refused) is refused here, with a message that says what to
// fix; net/http would refuse it too, before sending anything.
func authenticate(h http.Header, config map[string]string) error {
	token := config[ConfigToken]
	switch config[ConfigAuthType] {
	case "", AuthNone:
		return nil
	case AuthBearer:
		if token == "" {
			return connectors.Errorf(connectors.KindUpstreamAuth, nil, "bearer authentication is configured without a token")
		}
		if !httpguts.ValidHeaderFieldValue(token) {
			return unsendableToken()
		}
		h.Set("Authorization", "Bearer "+token)
	case AuthHeader:
		name := config[ConfigHeaderName]
		if !httpguts.ValidHeaderFieldName(name) || reserved(http.CanonicalHeaderKey(name)) {
			return rejected("the tool's header_name %q is not a usable header; reconfigure it", name)
		}
		if token == "" {
			return connectors.Errorf(connectors.KindUpstreamAuth, nil, "header authentication is configured without a token")
		}
		if !httpguts.ValidHeaderFieldValue(token) {
			return unsendableToken()
		}
		h.Set(name, token)
	default:
		return rejected("the tool's auth_type %q is unknown; reconfigure it", config[ConfigAuthType])
	}
	return nil
}

// unsendableToken refuses a token that no header can carry. It never shows
// the token.
func unsendableToken() error {
	return rejected("the tool's token holds a line break or control character, which no HTTP header can carry; nothing was sent; reconfigure the token")
}

// flatten joins each header's values with ", ", as HTTP combines a list;
// Set-Cookie, whose values may hold commas and never combine (RFC 9110
// §5.3), joins with "\n", which no header value can hold.
func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sep := ", "
		if name == "Set-Cookie" {
			sep = "\n"
		}
		out[name] = strings.Join(h[name], sep)
	}
	return out
}

// inUTF8 is data decoded from the charset the response declares (its
// Content-Type's charset parameter), when it declares one other than UTF-8
// that decodes data to valid UTF-8; else data as it is.
func inUTF8(data []byte, declared string) []byte {
	if label := strings.ToLower(declared); label != "" && label != "utf-8" && label != "utf8" {
		if r, err := charset.NewReaderLabel(label, bytes.NewReader(data)); err == nil {
			if decoded, err := io.ReadAll(r); err == nil && utf8.Valid(decoded) {
				return decoded
			}
		}
	}
	return data
}

// maxBodyDepth is how deep a JSON body may nest and still come parsed.
const maxBodyDepth = jsondepth.ResultLimit

// decodeBody is the parsed JSON for a JSON response, else the text, of a
// body already in UTF-8 where it could be (inUTF8); else base64 for bytes
// that are not text. mediaType is the response's, parsed from its
// Content-Type.
func decodeBody(data []byte, mediaType string) (any, string) {
	if mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") {
		// A byte order mark may lead (RFC 8259 §8.1 lets a parser ignore it).
		// A document nested too deep for clients to decode comes as text.
		if doc := bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")); json.Valid(doc) && !jsondepth.Exceeds(doc, maxBodyDepth) {
			return json.RawMessage(doc), ""
		}
	}
	if utf8.Valid(data) {
		return string(data), ""
	}
	return base64.StdEncoding.EncodeToString(data), "base64"
}
