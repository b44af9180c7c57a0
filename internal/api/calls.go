package api

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
)

func (s *Server) registerCalls(rg *gin.RouterGroup) {
	handle(rg, "POST", "/agents/custom-tools/call", s.call)
	handle(rg, "GET", "/agents/custom-tools/calls", s.listCalls)
	handle(rg, "GET", "/idempotency-keys/:key", s.getKey)
}

// IdempotencyKey reads the Idempotency-Key header: absent, or exactly one
// value of 1–255 printable ASCII characters without surrounding spaces.
func IdempotencyKey(h map[string][]string) (key string, present bool, err error) {
	vs := h["Idempotency-Key"]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, problem.New(problem.InvalidIdempotencyKey, "Send exactly one Idempotency-Key header.")
	}
	k := vs[0]
	if !calls.ValidKey(k) {
		return "", true, problem.New(problem.InvalidIdempotencyKey, "%s", invalidKeyMessage)
	}
	return k, true, nil
}

// invalidKeyMessage is the message of a malformed Idempotency-Key, the
// same whether the HTTP server refused its header line (refusal.go) or
// this handler refused its value.
const invalidKeyMessage = "The Idempotency-Key must be 1 to 255 printable ASCII characters, without leading or trailing spaces."

func (s *Server) call(c *gin.Context) {
	key, hasKey, err := IdempotencyKey(c.Request.Header)
	if err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	p := accounts.PrincipalFrom(c.Request.Context())
	resp, err := s.Calls.Call(c.Request.Context(), calls.Request{AccountID: p.Account, Body: b, Key: key, HasKey: hasKey,
		ReadOnly: p.ReadOnly})
	if err != nil {
		s.writeError(c, err)
		return
	}
	if resp.Replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	c.Data(resp.Status, resp.ContentType, resp.Body)
}

func (s *Server) listCalls(c *gin.Context) {
	bad := map[string]string{}
	list := callList
	var toolID *int64
	if v, given := c.GetQuery("tool"); given { // ?tool= too: an empty filter must not list every tool's calls
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 || strconv.FormatInt(id, 10) != v {
			bad["tool"] = "must be a tool ID (a positive integer)"
		}
		toolID = &id
		list = filtered(callList, "tool", v) // v is the one spelling of id when it is valid
	}
	p, err := page(c, list, bad, "tool")
	if err != nil {
		s.writeError(c, err)
		return
	}
	cs, next, err := s.Calls.Calls(c.Request.Context(), account(c), toolID, p)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(200, gin.H{"calls": cs, "next_cursor": cursor(next)})
}

func (s *Server) getKey(c *gin.Context) {
	ks, err := s.Calls.Key(c.Request.Context(), account(c), pathKey(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(200, ks)
}

// pathKey is the key GET /idempotency-keys/{key} names, read from the
// request's escaped path with url.PathUnescape. Gin's c.Param decodes an
// escaped path's values as a query's, which reads '+' as a space: a client
// that escapes "a+b/c" as a path segment (a+b%2Fc) would be shown another
// key's state, "a b/c".
func pathKey(c *gin.Context) string {
	const seg = "/idempotency-keys/"
	raw := c.Request.URL.EscapedPath()
	i := strings.Index(raw, seg)
	if i < 0 {
		return c.Param("key")
	}
	key, err := url.PathUnescape(strings.TrimSuffix(raw[i+len(seg):], "/"))
	if err != nil {
		return c.Param("key")
	}
	return key
}
