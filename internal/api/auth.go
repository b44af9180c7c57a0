package api

import (
	"errors"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/problem"
)

// authenticate resolves X-API-KEY (or Authorization: Bearer) to an account
// before anything else: before the body is read, before any lookup.
func (s *Server) authenticate(c *gin.Context) {
	key := c.GetHeader("X-API-KEY")
	if key == "" {
		key = bearer(c.GetHeader("Authorization"))
	}
	if key == "" {
		s.writeError(c, problem.New(problem.Unauthorized, "An API key is required: send it in the X-API-KEY header."))
		return
	}
	p, err := s.Accounts.Principal(c.Request.Context(), key)
	if errors.Is(err, accounts.ErrUnknownKey) {
		s.writeError(c, problem.New(problem.Unauthorized, "The API key is not valid."))
		return
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	if p.ReadOnly && !readOnlyAllowed(c) {
		s.writeError(c, problem.New(problem.Forbidden, "This API key is read-only: it cannot change anything."))
		return
	}
	c.Request = c.Request.WithContext(accounts.WithPrincipal(c.Request.Context(), p))
	c.Next()
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
	return route == "/api/v1/agents/custom-tools/call" || route == "/api/v1/agents/:id/mcp"
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

// bearer returns the credentials of an Authorization header with the Bearer
// scheme, whose name is case-insensitive (RFC 9110 §11.1), or "".
func bearer(h string) string {
	scheme, v, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(v)
}
