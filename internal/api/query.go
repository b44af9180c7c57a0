package api

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/problem"
)

// strictQuery refuses, on every authenticated route, a query string that
// does not parse whole: net/url's Query (which gin's c.Query reads) drops
// a pair with a bad percent escape or a ';' and keeps a parameter's first
// value, so ?tool=5%zz would list every tool's calls and ?limit=1;cursor=x
// a page of the default size. A filter the server cannot read must never
// widen an answer. No route takes a parameter twice, so one given twice
// is refused too rather than read as its first value.
func (s *Server) strictQuery(c *gin.Context) {
	if bad := queryProblems(c.Request.URL.RawQuery); len(bad) > 0 {
		s.writeError(c, problem.Validation("The query string is not valid.", bad))
		return
	}
	c.Next()
}

// queryField is the fields key of a problem in a pair whose name cannot be
// read.
const queryField = "query"

// queryProblems returns a message per parameter of raw (a URL's RawQuery)
// that is malformed or given more than once, under queryField when the
// parameter's name itself cannot be read; nil when raw parses whole.
func queryProblems(raw string) map[string]string {
	var bad map[string]string
	report := func(name, msg string) {
		if bad == nil {
			bad = map[string]string{}
		}
		if _, ok := bad[name]; !ok {
			bad[name] = msg
		}
	}
	seen := map[string]bool{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue // a&&b: nothing between the separators
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		switch {
		case strings.Contains(k, ";"):
			report(queryField, semicolon)
			continue
		case err != nil:
			report(queryField, "holds a parameter name with a malformed percent escape ('%' must be followed by two hex digits)")
			continue
		case name == "" || !utf8.ValidString(name):
			report(queryField, "holds a parameter without a name, or whose name is not UTF-8")
			continue
		}
		if strings.Contains(v, ";") {
			report(name, semicolon)
		} else if _, err := url.QueryUnescape(v); err != nil {
			report(name, "has a malformed percent escape ('%' must be followed by two hex digits)")
		} else if seen[name] {
			report(name, "is given more than once; send it once")
		}
		seen[name] = true
	}
	return bad
}

// semicolon is the message for a ';' in a query: it separated parameters
// once (and still does for some servers), so what it meant is ambiguous.
const semicolon = "holds ';', which does not separate parameters here: separate them with '&', or send ';' escaped as %3B"
