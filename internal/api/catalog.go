package api

import (
	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/problem"
)

// availableTool is a catalog entry in a list.
type availableTool struct {
	Name        string       `json:"name"`
	Type        catalog.Type `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Categories  []string     `json:"categories"`
	Auth        catalog.Auth `json:"auth"`
}

func (s *Server) registerCatalog(rg *gin.RouterGroup) {
	handle(rg, "GET", "/agents/tools/available", s.listCatalog)
	handle(rg, "GET", "/agents/tools/available/:name", s.getCatalog)
}

func (s *Server) listCatalog(c *gin.Context) {
	entries := s.Tools.Catalog().List(c.Query("category"))
	out := make([]availableTool, len(entries))
	for i, e := range entries {
		out[i] = availableTool{e.Name, e.Type, e.Title, e.Description, e.Categories, e.Auth}
	}
	c.JSON(200, gin.H{"tools": out})
}

func (s *Server) getCatalog(c *gin.Context) {
	e, ok := s.Tools.Catalog().Get(c.Param("name"))
	if !ok {
		s.writeError(c, problem.New(problem.NotFound, "The catalog has no tool named %q.", c.Param("name")))
		return
	}
	c.JSON(200, e)
}
