package toolconfig

import (
	"strings"

	"github.com/quiverhq/quiver/internal/problem"
)

// NotInCatalog is the 404 for a catalog name the catalog does not have.
// Names are lower-case slugs and are matched exactly, one name per tool on
// every route; one that differs from a name only in case or in the space
// around it ("Tavily", "tavily\n") is told the name it most likely means.
func (s *Service) NotInCatalog(name string) *problem.Error {
	p := problem.New(problem.NotFound, "The catalog has no tool named %s.", quoted(name))
	if e, ok := s.opts.Catalog.Get(strings.ToLower(strings.TrimSpace(name))); ok {
		p.Message = strings.TrimSuffix(p.Message, ".") + "; did you mean " + quoted(e.Name) + "?"
	}
	return p
}
