package api

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/store"
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

// listCatalog pages through the catalog like every other list; the cursor
// is the position after the last entry shown, so it is bound to the
// ?category= it was made under like the calls list's to its ?tool=: the
// same position in another category is another entry.
func (s *Server) listCatalog(c *gin.Context) {
	bad := map[string]string{}
	list := catalogList
	category, given := c.GetQuery("category")
	if given {
		// Categories are lower-case slugs (the catalog's validator says
		// so): "Search" names search, not a category with no tools. Bound
		// to the cursor as read, so one spelling's cursor pages another's.
		category = strings.ToLower(strings.TrimSpace(category))
		if category == "" {
			bad["category"] = "must name a category; leave it out to list them all"
		}
		list = filtered(catalogList, "category", category)
	}
	p, err := page(c, list, bad, "category")
	if err != nil {
		s.writeError(c, err)
		return
	}
	entries := s.Tools.Catalog().List(category)
	start := min(int(p.After), len(entries))
	end := min(start+p.Limit, len(entries))
	out := make([]availableTool, 0, end-start)
	for _, e := range entries[start:end] {
		out = append(out, availableTool{e.Name, e.Type, e.Title, e.Description, e.Categories, e.Auth})
	}
	var next string
	if end < len(entries) {
		next = store.EncodeCursor(list, int64(end))
	}
	c.JSON(200, gin.H{"tools": out, "next_cursor": cursor(next)})
}

func (s *Server) getCatalog(c *gin.Context) {
	e, ok := s.Tools.Catalog().Get(c.Param("name"))
	if !ok {
		s.writeError(c, s.Tools.NotInCatalog(c.Param("name")))
		return
	}
	c.JSON(200, e)
}
