package browser_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors/browser"
)

// TestFetchPageFirstBaseWins: a page's links resolve against the first
// <base> element that has an href, resolved against the page's own URL
// (HTML's frozen base URL), whatever other <base> elements follow; one
// without an href does not count, nor one that is no element of the
// document: in a template's contents, or in SVG or MathML, where "base" is
// another language's element. The same holds for a page read token by token
// (nested deeper than the parser takes).
func TestFetchPageFirstBaseWins(t *testing.T) {
	t.Parallel()
	link := `<a href="x">the link</a>`
	cases := []struct {
		name, head, want string
	}{
		{"first of two", `<base href="/first/"><base href="/second/">`, "/first/x"},
		{"later relative one", `<base href="/first/"><base href="deeper/">`, "/first/x"},
		{"first without href", `<base target="_blank"><base href="/second/">`, "/second/x"},
		{"in a template", `<template><base href="/tpl/"></template><base href="/real/">`, "/real/x"},
		{"in svg", `</head><body><svg><base href="/svg/"></base></svg><base href="/real/">`, "/real/x"},
		{"in math", `</head><body><math><base href="/math/"></base></math><base href="/real/">`, "/real/x"},
		{"none", ``, "/dir/x"},
	}
	for _, tc := range cases {
		for _, deep := range []bool{false, true} {
			name := tc.name
			body := "<html><head>" + tc.head + "</head><body>" + link + "</body></html>"
			if deep {
				name += " token by token"
				body = "<html><head>" + tc.head + "</head><body>" + strings.Repeat("<div>", 600) + link
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := serve(t, body)
				res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/dir/page")
				if err != nil {
					t.Fatal(err)
				}
				var p browser.Page
				if err := json.Unmarshal(res.Content, &p); err != nil {
					t.Fatal(err)
				}
				if len(p.Links) != 1 || p.Links[0].Href != srv.URL+tc.want {
					t.Errorf("links = %+v, want one to %s", p.Links, srv.URL+tc.want)
				}
			})
		}
	}
}
