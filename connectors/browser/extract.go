package browser

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// Limits of what a page yields. With them a page's result stays well under
// the 8 MiB a call's result may hold, however its bytes are spent: a 5 MiB
// title or link text, or a thousand huge hrefs, would otherwise lose the
// whole page to result_too_large.
const (
	maxTextRunes     = 100_000
	maxLinks         = 1000
	maxTitleRunes    = 1000
	maxLinkTextRunes = 300
	maxHrefBytes     = 2048 // a longer link is left out, not cut
)

// document is what an agent gets from an HTML page.
type document struct {
	title     string
	text      string
	links     []Link
	truncated bool
}

// skipped elements hold no readable text.
func skipped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Nav, atom.Noscript, atom.Template,
		atom.Head, atom.Svg, atom.Iframe, atom.Object, atom.Canvas, atom.Select:
		return true
	}
	return false
}

// block elements break lines in the readable text.
func block(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Br, atom.Hr, atom.Li, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Table, atom.Tr, atom.Td, atom.Th,
		atom.Thead, atom.Tbody, atom.Section, atom.Article, atom.Aside, atom.Header, atom.Footer,
		atom.Main, atom.Blockquote, atom.Pre, atom.Figure, atom.Figcaption, atom.Form, atom.Address,
		atom.Details, atom.Summary, atom.Body, atom.Caption, atom.Label, atom.Option:
		return true
	}
	return false
}

// toUTF8 decodes data by its declared or sniffed charset; data it cannot
// decode is kept as it is, with invalid UTF-8 replaced.
func toUTF8(data []byte, contentType string) string {
	if r, err := charset.NewReader(bytes.NewReader(data), contentType); err == nil {
		if out, err := io.ReadAll(r); err == nil {
			data = out
		}
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// readHTML parses a page fetched from base. A page the parser refuses
// (nested deeper than the 512 open elements it takes, as tag soup with
// unclosed elements may be) is read token by token instead.
func readHTML(data []byte, contentType string, base *url.URL) document {
	text := toUTF8(data, contentType)
	root, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return readTokens(text, base)
	}
	var doc document
	if href, ok := baseHref(root); ok {
		base = frozenBase(base, href)
	}
	var titleCut bool
	if t := find(root, atom.Title); t != nil {
		doc.title, titleCut = capText(collapse(textOf(t)), maxTitleRunes)
	}
	var b strings.Builder
	writeText(&b, root)
	doc.text, doc.truncated = capText(lines(b.String()), maxTextRunes)
	var cut bool
	doc.links, cut = links(root, base)
	doc.truncated = doc.truncated || cut || titleCut
	return doc
}

// writeText writes the readable text under n: whitespace runs as single
// spaces, block boundaries as newlines.
func writeText(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		// Source line breaks are whitespace; only blocks break lines.
		b.WriteString(strings.Map(spaceToBlank, n.Data))
		return
	case html.ElementNode:
		if skipped(n.DataAtom) {
			return
		}
		if block(n.DataAtom) {
			b.WriteByte('\n')
			defer b.WriteByte('\n')
		}
	case html.CommentNode, html.DoctypeNode:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		writeText(b, c)
	}
}

// lines collapses whitespace within each line and drops empty lines.
func lines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = collapse(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// capText cuts s to at most max runes.
func capText(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i, n := 0, 0
	for i = range s {
		if n == max {
			break
		}
		n++
	}
	return s[:i], true
}

// linkSet gathers a page's links: absolute, de-duplicated, in document
// order, within the limits.
type linkSet struct {
	out       []Link
	seen      map[string]bool
	truncated bool
}

func newLinkSet() *linkSet { return &linkSet{out: []Link{}, seen: map[string]bool{}} }

// add adds the link to href (relative to base) with the first of texts
// that is not empty, if it is an http(s) link: its href made absolute
// without the fragment, its text cut to maxLinkTextRunes.
func (s *linkSet) add(base *url.URL, href string, texts ...string) {
	u, err := base.Parse(strings.TrimSpace(href))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return
	}
	u.Fragment = ""
	l := Link{Href: u.String()}
	if s.seen[l.Href] {
		return
	}
	if len(s.out) >= maxLinks || len(l.Href) > maxHrefBytes {
		s.truncated = true
		return
	}
	for _, text := range texts {
		if text = collapse(text); text != "" {
			var cut bool
			l.Text, cut = capText(text, maxLinkTextRunes)
			s.truncated = s.truncated || cut
			break
		}
	}
	s.seen[l.Href] = true
	s.out = append(s.out, l)
}

// links returns the http(s) links of the page.
func links(root *html.Node, base *url.URL) ([]Link, bool) {
	set := newLinkSet()
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case hidesLinks(n.DataAtom):
				return
			case n.DataAtom == atom.A || n.DataAtom == atom.Area:
				if href, ok := attr(n, "href"); ok {
					label, _ := attr(n, "aria-label")
					title, _ := attr(n, "title")
					set.add(base, href, textOf(n), label, title)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return set.out, set.truncated
}

// textOf is all text under n, skipping non-readable elements.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// baseHref is the href of the document's first <base> element that has
// one, in tree order (HTML's frozen base URL): a later one, or one in a
// template's contents or in SVG or MathML (another language's "base"), does
// not count.
func baseHref(n *html.Node) (string, bool) {
	if n.Type == html.ElementNode {
		if n.Namespace != "" || n.DataAtom == atom.Template {
			return "", false
		}
		if n.DataAtom == atom.Base {
			if href, ok := attr(n, "href"); ok {
				return href, true
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if href, ok := baseHref(c); ok {
			return href, true
		}
	}
	return "", false
}

// frozenBase is the base URL a <base href> gives a page fetched from page:
// href resolved against the page's own URL, or that URL when href does not
// parse.
func frozenBase(page *url.URL, href string) *url.URL {
	if u, err := page.Parse(strings.TrimSpace(href)); err == nil {
		return u
	}
	return page
}

// find returns the first element of type a under n.
func find(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}
