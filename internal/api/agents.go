package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/problem"
)

func (s *Server) registerAgents(rg *gin.RouterGroup) {
	handle(rg, "POST", "/agents", s.createAgent)
	handle(rg, "GET", "/agents", s.listAgents)
	handle(rg, "GET", "/agents/:id", s.getAgent)
	handle(rg, "PATCH", "/agents/:id", s.updateAgent)
	handle(rg, "DELETE", "/agents/:id", s.deleteAgent)
}

func (s *Server) agentInput(c *gin.Context) (agents.Input, error) {
	m, err := s.object(c, false)
	if err != nil {
		return agents.Input{}, err
	}
	f := newFields(m)
	var in agents.Input
	var name, goal, status string
	var tools []*int64 // pointers, so a null in the list is not read as ID 0
	if f.get("name", &name, "a string") {
		in.Name = &name
	}
	if f.get("goal", &goal, "a string") {
		in.Goal = &goal
	}
	if f.get("status", &status, "one of draft, active, paused") {
		in.Status = &status
	}
	if f.get("tools", &tools, "a list of integer tool IDs") {
		ids := make([]int64, len(tools))
		for i, id := range tools {
			if id == nil {
				f.bad["tools"] = "must be a list of integer tool IDs, without null"
				break
			}
			ids[i] = *id
		}
		if f.bad["tools"] == "" {
			in.Tools = &ids
		}
	}
	if len(f.bad) == 0 {
		return in, nil
	}
	// Report the fields that decoded but are not valid too, with the ones
	// that did not decode, so one answer names every bad field.
	creating := c.Request.Method == http.MethodPost
	if p, ok := problem.As(s.Agents.Check(c.Request.Context(), account(c), in, creating)); ok && p.Code == problem.ValidationError {
		for name, msg := range p.Fields {
			if _, typed := f.bad[name]; !typed {
				f.bad[name] = msg
			}
		}
	}
	return in, f.err()
}

func (s *Server) createAgent(c *gin.Context) {
	in, err := s.agentInput(c)
	if err == nil {
		var a *agents.Agent
		if a, err = s.Agents.Create(c.Request.Context(), account(c), in); err == nil {
			c.JSON(201, a)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) listAgents(c *gin.Context) {
	p, err := page(c, agentList, nil)
	if err != nil {
		s.writeError(c, err)
		return
	}
	as, next, err := s.Agents.List(c.Request.Context(), account(c), p)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(200, gin.H{"agents": as, "next_cursor": cursor(next)})
}

func (s *Server) getAgent(c *gin.Context) {
	id, err := pathID(c, "agent")
	if err == nil {
		var a *agents.Agent
		if a, err = s.Agents.Get(c.Request.Context(), account(c), id); err == nil {
			c.JSON(200, a)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) updateAgent(c *gin.Context) {
	id, err := pathID(c, "agent")
	if err != nil {
		s.writeError(c, err)
		return
	}
	in, err := s.agentInput(c)
	if err == nil {
		var a *agents.Agent
		if a, err = s.Agents.Update(c.Request.Context(), account(c), id, in); err == nil {
			c.JSON(200, a)
			return
		}
	}
	s.writeError(c, err)
}

func (s *Server) deleteAgent(c *gin.Context) {
	id, err := pathID(c, "agent")
	if err == nil {
		if err = s.Agents.Delete(c.Request.Context(), account(c), id); err == nil {
			c.Status(204)
			return
		}
	}
	s.writeError(c, err)
}
