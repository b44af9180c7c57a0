package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
)

// OAuthRequiredError is returned by Verify when the server refused a request
// without credentials with 401: the tool may need an OAuth step, not a
// corrected field. The server either pointed at its OAuth protected-resource
// metadata (RFC 9728 §5.1: ResourceMetadataURL is set) or named none, and
// then its metadata may still be at the RFC 9728 §3 well-known URIs of its
// URL, as the MCP authorization spec has clients look; when it is at
// neither, the 401 was a plain refusal and Refusal, which the error unwraps
// to, is the answer.
type OAuthRequiredError struct {
	// ResourceMetadataURL is the resource_metadata URL from the server's
	// WWW-Authenticate header, or "" when it gave none.
	ResourceMetadataURL string
	// Scope is the scope the header asked for, if any.
	Scope string
	// Refusal is the field error the 401 is when no metadata is found;
	// set only when ResourceMetadataURL is "".
	Refusal *connectors.FieldError
}

func (e *OAuthRequiredError) Error() string {
	if e.ResourceMetadataURL == "" {
		return "the MCP server requires credentials and named no OAuth resource metadata"
	}
	return "the MCP server requires OAuth authorization (resource metadata at " + e.ResourceMetadataURL + ")"
}

// Unwrap returns Refusal, so that a caller that does not look for the
// metadata at the well-known URIs gets the field error as before.
func (e *OAuthRequiredError) Unwrap() error {
	if e.Refusal == nil {
		return nil
	}
	return e.Refusal
}

// Verify connects to the MCP server named by entry (hosted) or config["url"],
// initializes a session and lists its tools, so that a configuration step is
// accepted only when it works. A problem is a *connectors.FieldError on
// "url", "bearer_token" or "headers", or an *OAuthRequiredError when the
// server refused with 401 and no credentials were given.
func (c *Connector) Verify(ctx context.Context, entry *catalog.Entry, config map[string]string) error {
	tgt, err := resolveTarget(entry, config, "")
	if err != nil {
		return err
	}
	if _, ok := tgt.headers["Authorization"]; ok && tgt.bearer {
		// bearer_token sets the header: the one in headers would go unused.
		return &connectors.FieldError{Field: "headers", Message: "Authorization is set from bearer_token; give the credential in one of the two, not both."}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	a := &attempt{}
	sess, err := c.dial(withAttempt(ctx, a), tgt, nil, nil, nil)
	if err != nil {
		st := a.snapshot()
		if (entry == nil || entry.MCPURL == "") && st.err == nil && legacyStatus(st.status) && c.legacySSE(ctx, tgt) {
			return &connectors.FieldError{Field: "url", Message: "This server speaks MCP's older HTTP+SSE transport, which Quiver does not: " +
				"give its streamable-HTTP endpoint instead (many servers serve both, the newer one often at /mcp)."}
		}
		return verifyError(st, err, tgt, entry)
	}
	defer sess.Close()
	if _, st, err := c.listTools(ctx, sess); err != nil {
		if init := sess.InitializeResult(); init != nil && (init.Capabilities == nil || init.Capabilities.Tools == nil) &&
			st.status == http.StatusOK && isMethodNotFound(err) {
			// It answered as an MCP server, one that serves something else
			// (resources, prompts): there is nothing for Quiver to call.
			return &connectors.FieldError{Field: "url", Message: fmt.Sprintf(
				"%s is an MCP server but offers no tools (its initialize answer names no tools capability).", tgt.host)}
		}
		return verifyError(st, err, tgt, entry)
	}
	return nil
}

// isMethodNotFound reports whether the server answered with JSON-RPC's
// method not found.
func isMethodNotFound(err error) bool {
	werr := serverError(err)
	return werr != nil && werr.Code == jsonrpc.CodeMethodNotFound
}

// verifyError names the configuration field a failed check points at.
func verifyError(a attemptState, err error, tgt *target, entry *catalog.Entry) error {
	err, a.err = redact(err, tgt), redact(a.err, tgt)
	urlField := &connectors.FieldError{Field: "url"}
	if entry != nil && entry.MCPURL != "" {
		urlField.Field = "" // a hosted server: the user cannot fix its URL
	}
	switch {
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		anonymous := tgt.auth == "" && len(tgt.headers) == 0
		meta, scope := resourceMetadata(a.header)
		if anonymous && a.status == http.StatusUnauthorized && meta != "" {
			return &OAuthRequiredError{ResourceMetadataURL: meta, Scope: scope}
		}
		field := "bearer_token"
		if !tgt.bearer && len(tgt.headers) > 0 {
			field = "headers"
		}
		// The server's own words, when it gave any, after ours: alone they
		// may be a bare code ("invalid_token").
		msg := fmt.Sprintf("The server refused these credentials (HTTP %d)", a.status)
		if anonymous {
			msg = fmt.Sprintf("The server requires credentials (HTTP %d)", a.status)
		}
		if said := refusalMessage(a, tgt); said != http.StatusText(a.status) {
			msg += ": " + strings.TrimRight(said, ".")
		}
		fe := &connectors.FieldError{Field: field, Message: msg + "."}
		if anonymous && a.status == http.StatusUnauthorized {
			// No pointer to metadata: it may be at the well-known URIs
			// (the MCP authorization spec's second way), and the
			// refusal stands when it is not.
			return &OAuthRequiredError{Scope: scope, Refusal: fe}
		}
		return fe
	case !a.started || (a.err != nil && egress.IsConnectFailure(a.err)):
		if a.err != nil && egress.IsBlocked(a.err) {
			urlField.Message = blockedWhere(a, tgt, "") + "."
		} else {
			urlField.Message = fmt.Sprintf("Could not connect to %s: %s.", tgt.host, connectReason(a.err, err))
		}
	case a.err != nil:
		urlField.Message = fmt.Sprintf("The connection to %s failed before it answered: %s.", tgt.host, connectReason(a.err, err))
	case a.status == http.StatusTooManyRequests:
		// Not the URL's fault: the server is limiting us for now.
		wait := connectors.RetryAfter(a.header.Get("Retry-After"), time.Now())
		urlField.Message = fmt.Sprintf("The server is limiting requests (HTTP 429: %s); nothing is wrong with this configuration, so send it again in %s.",
			refusalMessage(a, tgt), wait.Round(time.Second))
	case a.status != 0 && (a.status < 200 || a.status > 299):
		urlField.Message = fmt.Sprintf("The server answered HTTP %d (%s); is this the MCP endpoint?", a.status, refusalMessage(a, tgt))
	case errors.Is(err, errTooManyTools):
		urlField.Message = fmt.Sprintf("%s %v.", tgt.host, err)
	case isTimeout(err):
		urlField.Message = fmt.Sprintf("%s did not complete the MCP handshake in time.", tgt.host)
	default:
		urlField.Message = fmt.Sprintf("%s did not answer as an MCP server: %s.", tgt.host, clip(err.Error()))
	}
	if urlField.Field == "" {
		return connectors.Errorf(connectors.KindUnreachable, err, "%s", urlField.Message)
	}
	return urlField
}

// connectReason is a short reason a connection failed, without the request
// details (which name the URL, and may carry a token in its query).
func connectReason(errs ...error) string {
	for _, err := range errs {
		if err == nil {
			continue
		}
		s := err.Error()
		switch {
		case strings.Contains(s, "connection refused"):
			return "connection refused"
		case strings.Contains(s, "no such host"):
			return "no such host"
		case strings.Contains(s, "timeout"), strings.Contains(s, "deadline exceeded"):
			return "timed out"
		case strings.Contains(s, "certificate"):
			return "TLS certificate not valid"
		case strings.Contains(s, "first record does not look like a TLS handshake"),
			strings.Contains(s, "server gave HTTP response to HTTPS client"):
			return "the server does not speak TLS on this port (is its URL http://?)"
		case strings.Contains(s, "tls: "):
			return "the TLS handshake failed"
		}
	}
	return "the connection failed"
}

// resourceMetadata returns the resource_metadata parameter of a challenge
// in WWW-Authenticate headers (RFC 9728 §5.1) and that challenge's scope;
// when none names metadata, scope is the first Bearer challenge's (RFC
// 6750 §3), if any.
func resourceMetadata(h http.Header) (metadata, scope string) {
	bearerScope := ""
	for _, v := range h.Values("WWW-Authenticate") {
		for _, c := range challenges(v) {
			params := authParams(c)
			if m := params["resource_metadata"]; m != "" {
				return m, params["scope"]
			}
			scheme, _, _ := strings.Cut(strings.TrimSpace(c), " ")
			if bearerScope == "" && strings.EqualFold(scheme, "Bearer") {
				bearerScope = params["scope"]
			}
		}
	}
	return "", bearerScope
}

// challenges splits a WWW-Authenticate value into its challenges, since one
// value may carry several (RFC 9110 §11.6.1): `DPoP algs="ES256", Bearer
// resource_metadata="…"`. A comma outside quotes ends a challenge when what
// follows it starts with an auth-scheme, a token not followed by "=".
func challenges(v string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted && startsChallenge(v[i+1:]):
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// startsChallenge reports whether s, what follows a comma in a
// WWW-Authenticate value, starts with an auth-scheme rather than an
// auth-param (name "=" value).
func startsChallenge(s string) bool {
	s = strings.TrimLeft(s, " \t,")
	end := strings.IndexAny(s, " \t=,")
	if end < 0 {
		return s != ""
	}
	return end > 0 && !strings.HasPrefix(strings.TrimLeft(s[end:], " \t"), "=")
}

// authParams parses the auth-params of a challenge such as
// `Bearer realm="x", resource_metadata="https://…", scope="a b"`.
func authParams(challenge string) map[string]string {
	out := map[string]string{}
	s := strings.TrimSpace(challenge)
	if i := strings.IndexByte(s, ' '); i > 0 && !strings.Contains(s[:i], "=") {
		s = s[i+1:] // the scheme
	}
	for s != "" {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			break
		}
		name := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " ")
		var value string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			value, s = b.String(), s[min(i+1, len(s)):]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			value, s = strings.TrimSpace(s[:end]), s[end:]
		}
		out[name] = value
	}
	return out
}
