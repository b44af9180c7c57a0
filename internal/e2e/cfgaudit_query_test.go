package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestListEmptyLimit: ?limit= given empty is not an integer from 1 to 200, so
// every list refuses it with fields.limit, as it refuses ?limit=abc and as
// the other list parameters refuse an empty value; it is not read as the
// default. An empty ?cursor= still starts at the first page.
func TestListEmptyLimit(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	for _, path := range []string{
		"/api/v1/agents/tools/available/?limit=",
		"/api/v1/agents/tools/available/?category=search&limit=",
		"/api/v1/agents/custom-tools/?limit=",
		"/api/v1/agents/custom-tools/calls/?limit=",
		"/api/v1/agents/?limit=",
		"/api/v1/agents/?limit=&cursor=",
	} {
		fdWantFields(t, c.do("GET", path, nil), "validation_error", "limit")
	}
	c.ok(200, "GET", "/api/v1/agents/?limit=5&cursor=", nil)
	c.ok(200, "GET", "/api/v1/agents/?cursor=", nil)
}
