package api

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
)

func (s *Server) registerTools(rg *gin.RouterGroup) {
	handle(rg, "POST", "/agents/custom-tools", s.createTool)
	handle(rg, "GET", "/agents/custom-tools", s.listTools)
	handle(rg, "GET", "/agents/custom-tools/:id", s.getTool)
	handle(rg, "DELETE", "/agents/custom-tools/:id", s.deleteTool)
	handle(rg, "POST", "/agents/custom-tools/:id/provide-config", s.provideConfig)
	handle(rg, "POST", "/agents/custom-tools/:id/reset-config", s.resetConfig)
	handle(rg, "GET", "/agents/custom-tools/:id/actions", s.toolActions)
}

func (s *Server) createTool(c *gin.Context) {
	m, err := s.object(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	f := newFields(m)
	var name, label string
	if !f.get("mcp_tool", &name, "a catalog tool name") && f.bad["mcp_tool"] == "" || f.bad["mcp_tool"] == "" && strings.TrimSpace(name) == "" {
		f.bad["mcp_tool"] = "is required"
	}
	f.get("name", &label, "a string")
	label = strings.TrimSpace(label) // counted as kept, as an agent's name is
	if agents.Blank(label) {
		label = "" // shows nothing: the catalog name, as for a blank one
	}
	switch {
	case utf8.RuneCountInString(label) > 200:
		f.bad["name"] = "must be at most 200 characters"
	case agents.HasControl(label):
		f.bad["name"] = agents.OneLine
	}
	if err := f.err(); err != nil {
		s.writeError(c, err)
		return
	}
	v, err := s.Tools.Create(c.Request.Context(), account(c), name, label)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(201, v)
}

func (s *Server) listTools(c *gin.Context) {
	p, err := page(c, toolList, nil)
	if err != nil {
		s.writeError(c, err)
		return
	}
	vs, next, err := s.Tools.List(c.Request.Context(), account(c), p)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(200, gin.H{"tools": vs, "next_cursor": cursor(next)})
}

func (s *Server) getTool(c *gin.Context) {
	id, err := pathID(c, "connected tool")
	if err == nil {
		var v any
		if v, err = s.Tools.Get(c.Request.Context(), account(c), id); err == nil {
			c.JSON(200, v)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) deleteTool(c *gin.Context) {
	id, err := pathID(c, "connected tool")
	if err == nil {
		if err = s.Tools.Delete(c.Request.Context(), account(c), id); err == nil {
			c.Status(204)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) provideConfig(c *gin.Context) {
	id, err := pathID(c, "connected tool")
	if err != nil {
		s.writeError(c, err)
		return
	}
	m, err := s.object(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	f := newFields(m)
	var answers map[string]json.RawMessage
	if !f.get("user_response", &answers, "an object of answers") && f.bad["user_response"] == "" {
		f.bad["user_response"] = "is required"
	}
	if err := f.err(); err != nil {
		s.writeError(c, err)
		return
	}
	v, err := s.Tools.Provide(c.Request.Context(), account(c), id, answers)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(200, v)
}

func (s *Server) resetConfig(c *gin.Context) {
	id, err := pathID(c, "connected tool")
	if err == nil {
		var v any
		if v, err = s.Tools.Reset(c.Request.Context(), account(c), id); err == nil {
			c.JSON(200, v)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) toolActions(c *gin.Context) {
	id, err := pathID(c, "connected tool")
	if err != nil {
		s.writeError(c, err)
		return
	}
	_, actions, err := s.Calls.Actions(c.Request.Context(), account(c), id)
	if err != nil {
		// Nothing ran: mapped as a call's listing is (after the same token
		// refresh a call gets).
		s.writeError(c, calls.ListingProblem(err))
		return
	}
	c.JSON(200, gin.H{"actions": withAnnotations(actions)})
}

// withAnnotations is actions with annotations on each, as API.md's Action
// has them: {} for an MCP tool that declared none (MCP's defaults then
// hold: not read-only, not idempotent, so not retryable). actions may be
// a cached list: a copy is changed, only when one lacks them.
func withAnnotations(actions []connectors.Action) []connectors.Action {
	var out []connectors.Action
	for i, a := range actions {
		if a.Annotations != nil {
			continue
		}
		if out == nil {
			out = slices.Clone(actions)
		}
		out[i].Annotations = &catalog.Annotations{}
	}
	if out == nil {
		return actions
	}
	return out
}
