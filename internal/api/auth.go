package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/problem"
)

// authenticate resolves X-API-KEY (or Authorization: Bearer) to an account
// before anything else: before the body is read, before any lookup.
func (s *Server) authenticate(c *gin.Context) {
	key, ambiguous := apiKey(c.Request.Header)
	switch {
	case ambiguous:
		s.unauthorized(c, "invalid_request", "The request carries two different API keys; send one.")
		return
	case key == "":
		s.unauthorized(c, "", "An API key is required: send it in the X-API-KEY header.")
		return
	}
	p, err := s.Accounts.Principal(c.Request.Context(), key)
	if errors.Is(err, accounts.ErrUnknownKey) {
		s.unauthorized(c, "invalid_token", "The API key is not valid.")
		return
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Request = c.Request.WithContext(accounts.WithPrincipal(c.Request.Context(), p))
	c.Next()
}

// readOnly refuses a read-only key a request that would change something.
// It runs on matched routes only, after staticFirst: where no route takes
// the request, every key gets the same 404 or 405, since no permission
// would make it one a route takes.
func (s *Server) readOnly(c *gin.Context) {
	if accounts.PrincipalFrom(c.Request.Context()).ReadOnly && !readOnlyAllowed(c) {
		s.writeError(c, problem.New(problem.Forbidden, "This API key is read-only: it cannot change anything."))
		return
	}
	c.Next()
}

// unauthorized answers 401 with the challenge HTTP requires of it (RFC 9110
// 11.6.1), in the Bearer scheme the key is also accepted in (RFC 6750 3):
// an error code only when a key was sent (invalid_token for an unknown one,
// invalid_request for two), as RFC 6750 asks. MCP clients read it too.
func (s *Server) unauthorized(c *gin.Context, code, message string) {
	challenge := `Bearer realm="quiver"`
	if code != "" {
		challenge += `, error="` + code + `"`
	}
	c.Header("WWW-Authenticate", challenge)
	s.writeError(c, problem.New(problem.Unauthorized, "%s", message))
}

// readOnlyAllowed reports whether a read-only key may make this request:
// any read, and the two ways of calling a tool, where the engine lets
// through only actions annotated read-only.
func readOnlyAllowed(c *gin.Context) bool {
	switch c.Request.Method {
	case "GET", "HEAD":
		return true
	}
	route := strings.TrimSuffix(c.FullPath(), "/")
	return route == "/api/v1/agents/custom-tools/call" || route == mcpRoute
}

// account is the authenticated caller's account.
func account(c *gin.Context) int64 { return accounts.PrincipalFrom(c.Request.Context()).Account }

// authenticateAPI authenticates requests under /api/v1 (but the OAuth
// callback, which its state authenticates) and lets others through.
func (s *Server) authenticateAPI(c *gin.Context) {
	p := c.Request.URL.Path
	if strings.HasPrefix(p, "/api/v1/") && !strings.HasPrefix(p, "/api/v1/oauth/") {
		s.authenticate(c)
	}
}

// apiKey returns the API key a request carries in X-API-KEY or as
// Authorization: Bearer; ambiguous when it carries two different ones, so
// that a request naming two accounts is refused, not served as one of them.
func apiKey(h http.Header) (key string, ambiguous bool) {
	add := func(k string) {
		switch {
		case k == "" || k == key:
		case key == "":
			key = k
		default:
			ambiguous = true
		}
	}
	for _, v := range h.Values("X-API-KEY") {
		add(v)
	}
	for _, v := range h.Values("Authorization") {
		add(bearer(v))
	}
	return key, ambiguous
}

// bearer returns the credentials of an Authorization header with the Bearer
// scheme, whose name is case-insensitive (RFC 9110 §11.1), or "".
func bearer(h string) string {
	scheme, v, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(v)
}
