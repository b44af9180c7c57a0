package calls

import (
	"net/url"
	"strconv"
	"strings"
)

// An input schema comes from the tool's server, and a schema can be written
// so that a validator applies it to the same value forever: {"$ref": "#"}
// at its root, or two definitions that only refer to each other. The
// validator then recurses until the process dies of a stack overflow, which
// no recover catches: one tool's schema would take every account's service
// down. inPlaceLoop finds such schemas beforehand, and they are not enforced
// (the tool judges its arguments itself).

// inPlaceKeywords apply their subschemas to the very value the schema
// applies to; a cycle through them never ends. Keywords that move into the
// value (properties, items, …) end with it, since values are finite.
var inPlaceKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true,
	"not": true, "if": true, "then": true, "else": true, "dependentSchemas": true}

// inPlaceLoop reports whether doc, a decoded JSON Schema, has a cycle of
// in-place applications: through $ref and $dynamicRef (resolved within the
// document, by JSON pointer, anchor or $id, as the validator does) and the
// inPlaceKeywords.
func inPlaceLoop(doc any) bool {
	g := &schemaGraph{nodes: map[string]map[string]any{}, resource: map[string]string{}, base: map[string]*url.URL{},
		ids: map[string]string{}, anchors: map[string]string{}}
	g.walk(doc, "", "", &url.URL{})
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(p string) bool
	visit = func(p string) bool {
		switch state[p] {
		case open:
			return true
		case done:
			return false
		}
		state[p] = open
		for _, next := range g.edges(p) {
			if visit(next) {
				return true
			}
		}
		state[p] = done
		return false
	}
	for p := range g.nodes {
		if visit(p) {
			return true
		}
	}
	return false
}

// schemaGraph indexes every object of a schema document by its JSON
// pointer.
type schemaGraph struct {
	nodes    map[string]map[string]any
	resource map[string]string // node → the pointer of its resource root
	base     map[string]*url.URL
	ids      map[string]string // absolute $id (no fragment) → pointer
	anchors  map[string]string // resource pointer + "#" + anchor → pointer
}

func (g *schemaGraph) walk(v any, p, res string, base *url.URL) {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"].(string); ok {
			if u, err := base.Parse(id); err == nil {
				u.Fragment, u.RawFragment = "", ""
				base, res = u, p
				g.ids[u.String()] = p
			}
		}
		g.nodes[p], g.resource[p], g.base[p] = x, res, base
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := x[k].(string); ok {
				g.anchors[res+"#"+a] = p
			}
		}
		for k, e := range x {
			g.walk(e, p+"/"+escapePointer(k), res, base)
		}
	case []any:
		for i, e := range x {
			g.walk(e, p+"/"+strconv.Itoa(i), res, base)
		}
	}
}

// edges are the nodes p applies in place.
func (g *schemaGraph) edges(p string) []string {
	m := g.nodes[p]
	var out []string
	add := func(q string) {
		if _, ok := g.nodes[q]; ok {
			out = append(out, q)
		}
	}
	for k, v := range m {
		switch {
		case k == "$ref" || k == "$dynamicRef":
			if ref, ok := v.(string); ok {
				if q, ok := g.resolve(p, ref); ok {
					add(q)
				}
			}
		case inPlaceKeywords[k]:
			switch x := v.(type) {
			case []any:
				for i := range x {
					add(p + "/" + escapePointer(k) + "/" + strconv.Itoa(i))
				}
			case map[string]any:
				if k == "dependentSchemas" {
					for name := range x {
						add(p + "/dependentSchemas/" + escapePointer(name))
					}
				} else {
					add(p + "/" + k)
				}
			}
		}
	}
	return out
}

// resolve finds the node a reference in node p names within the document.
func (g *schemaGraph) resolve(p, ref string) (string, bool) {
	u, err := g.base[p].Parse(ref)
	if err != nil {
		return "", false
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	res := g.resource[p]
	if doc := u.String(); doc != "" && doc != g.base[p].String() {
		var ok bool
		if res, ok = g.ids[doc]; !ok {
			return "", false // another document: the validator does not fetch it
		}
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		q := res
		for _, tok := range strings.Split(frag, "/")[1:] {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			q += "/" + escapePointer(tok)
		}
		return q, true
	}
	q, ok := g.anchors[res+"#"+frag]
	return q, ok
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
