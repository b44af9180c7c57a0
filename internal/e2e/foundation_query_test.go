package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestQueryMustParse: a query string that does not parse whole, names a
// parameter twice, or names one the list does not take, is a 422 naming the
// parameter on every route that reads one, never a wider answer read from
// what did parse.
func TestQueryMustParse(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	for _, tc := range []struct{ path, field string }{
		{"/api/v1/agents/custom-tools/calls/?tool=5%zz", "tool"},
		{"/api/v1/agents/custom-tools/calls/?tool=5;", "tool"},
		{"/api/v1/agents/custom-tools/calls/?tool=1&tool=2", "tool"},
		{"/api/v1/agents/custom-tools/calls/?limit=5%zz", "limit"},
		{"/api/v1/agents/custom-tools/calls/?limit=1;cursor=x", "limit"},
		{"/api/v1/agents/tools/available/?category=search%zz", "category"},
		{"/api/v1/agents/tools/available/?category=search&category=browser", "category"},
		{"/api/v1/agents/tools/available/?limit=1;cursor=x", "limit"},
		{"/api/v1/agents/custom-tools/?limit=5%zz", "limit"},
		{"/api/v1/agents/?cursor=a&cursor=b", "cursor"},
		{"/api/v1/agents/?x%zz=1", "query"},
		{"/api/v1/agents/?a;b=1", "query"},
		// A filter given empty filters nothing it can read: refused, not all.
		{"/api/v1/agents/custom-tools/calls/?tool=", "tool"},
		{"/api/v1/agents/tools/available/?category=", "category"},
		{"/api/v1/agents/tools/available/?category=%20", "category"},
		// A parameter the list does not take (a misspelt filter) would
		// list everything: refused, naming it.
		{"/api/v1/agents/custom-tools/calls/?tool_id=5", "tool_id"},
		{"/api/v1/agents/?limt=5", "limt"},
		{"/api/v1/agents/tools/available/?categories=search", "categories"},
		{"/api/v1/agents/custom-tools/?tool=5", "tool"},
		{"/api/v1/agents/custom-tools/?=5", "query"},
	} {
		fdWantFields(t, c.do("GET", tc.path, nil), "validation_error", tc.field)
	}
	// Well-formed queries still read as before: escapes, '+', empty pairs.
	if r := c.ok(200, "GET", "/api/v1/agents/tools/available/?category=%73earch&&limit=200", nil); len(fdList(t, r, "tools")) == 0 {
		t.Errorf("?category=%%73earch matched nothing: %v", r)
	}
	c.ok(200, "GET", "/api/v1/agents/custom-tools/calls/?limit=5&cursor=", nil)
	// 401 still comes before the query is looked at.
	fdWantError(t, c.as("").do("GET", "/api/v1/agents/custom-tools/calls/?tool=5%zz", nil), 401, "unauthorized")
}
