package browser

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// Limits of what a page yields.
const (
	maxTextRunes = 100_000
	maxLinks     = 1000
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

// readHTML parses a page fetched from base.
func readHTML(data []byte, contentType string, base *url.URL) document {
	root, err := html.Parse(strings.NewReader(toUTF8(data, contentType)))
	if err != nil {
		return document{links: []Link{}}
	}
	var doc document
	if b := find(root, atom.Base); b != nil {
		if href, ok := attr(b, "href"); ok {
			if u, err := base.Parse(href); err == nil {
				base = u
			}
		}
	}
	if t := find(root, atom.Title); t != nil {
		doc.title = collapse(textOf(t))
	}
	var b strings.Builder
	writeText(&b, root)
	doc.text, doc.truncated = capText(lines(b.String()), maxTextRunes)
	var cut bool
	doc.links, cut = links(root, base)
	doc.truncated = doc.truncated || cut
	return doc
}

// writeText writes the readable text under n: whitespace runs as single
// spaces, block boundaries as newlines.
func writeText(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		// Source line breaks are whitespace; only blocks break lines.
		b.WriteString(strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return ' '
			}
			return r
		}, n.Data))
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

// links returns the http(s) links of the page, absolute and de-duplicated,
// in document order.
func links(root *html.Node, base *url.URL) ([]Link, bool) {
	out := []Link{}
	seen := map[string]bool{}
	truncated := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Template, atom.Noscript:
				return
			case atom.A, atom.Area:
				if l, ok := link(n, base); ok && !seen[l.Href] {
					if len(out) >= maxLinks {
						truncated = true
						return
					}
					seen[l.Href] = true
					out = append(out, l)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out, truncated
}

// link is the hyperlink of an a or area element, if it has an http(s) one:
// its href made absolute without the fragment, its text or else its
// aria-label or title.
func link(n *html.Node, base *url.URL) (Link, bool) {
	href, ok := attr(n, "href")
	if !ok {
		return Link{}, false
	}
	u, err := base.Parse(strings.TrimSpace(href))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return Link{}, false
	}
	u.Fragment = ""
	text := collapse(textOf(n))
	if text == "" {
		text, _ = attr(n, "aria-label")
	}
	if text == "" {
		text, _ = attr(n, "title")
	}
	return Link{Text: text, Href: u.String()}, true
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
