package toolconfig

import (
	"context"
	"fmt"
	"strings"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// NotInCatalog is the 404 for a catalog name the catalog does not have.
// Names are lower-case slugs and are matched exactly, one name per tool on
// every route; one that differs from a name only in case or in the space
// around it ("Tavily", "tavily\n") is told the name it most likely means.
func (s *Service) NotInCatalog(name string) *problem.Error {
	p := problem.New(problem.NotFound, "The catalog has no tool named %s.", problem.Quote(name))
	if e, ok := s.opts.Catalog.Get(strings.ToLower(strings.TrimSpace(name))); ok {
		p.Message = strings.TrimSuffix(p.Message, ".") + "; did you mean " + problem.Quote(e.Name) + "?"
	}
	return p
}

// notInThisCatalog is the answer for a stored tool whose catalog entry this
// server's catalog does not have: during a rolling upgrade, a replica of the
// newer version connected it. Nothing was done, and a replica of that
// version can serve it, so it is 503 with Retry-After, not a 500.
func (s *Service) notInThisCatalog(ctx context.Context, t *store.Tool) *problem.Error {
	s.opts.Logger.WarnContext(ctx, "tool of a catalog entry this server does not have", "tool", t.ID, "catalog", t.CatalogName)
	return &problem.Error{Code: problem.Unavailable, RetryAfter: 5,
		Message: fmt.Sprintf("Tool %d is a %s tool, which this server's catalog does not have: another version of Quiver connected it. "+
			"Retry shortly, or delete the tool.", t.ID, problem.Quote(t.CatalogName)),
		Err: fmt.Errorf("toolconfig: tool %d names catalog entry %q, which this server does not have", t.ID, t.CatalogName)}
}
