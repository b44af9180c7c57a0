package browser

import (
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// readTokens reads a page token by token, without building its tree: for
// a page the parser refuses. It yields what readHTML does, as well as a
// flat reading can: the first title, the text outside skipped elements
// with blocks as line breaks, and the links. The head is not skipped as a
// whole, since tag soup seldom closes it; what it holds (title, scripts,
// styles) is handled element by element.
func readTokens(text string, base *url.URL) document {
	z := html.NewTokenizer(strings.NewReader(text))
	var body, title, anchor strings.Builder
	var href, label, hint string
	inTitle, titleSeen, inAnchor := false, false, false
	// How many skipped elements are open, and how many of those hide
	// links too, as links() skips them.
	skip, hidden := 0, 0
	// How many templates, SVG and MathML elements are open: a <base> in
	// them is not the document's.
	outside := 0
	// The links are resolved at the end, against the first <base href>
	// (frozenBase, as readHTML does).
	page, baseSeen := base, false
	type pending struct{ href, text, label, hint string }
	var found []pending
	endAnchor := func() {
		if inAnchor {
			found = append(found, pending{href, anchor.String(), label, hint})
			anchor.Reset()
			inAnchor = false
		}
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		switch tt {
		case html.TextToken:
			data := string(z.Text())
			if inTitle {
				title.WriteString(data)
				continue
			}
			if skip == 0 {
				body.WriteString(strings.Map(spaceToBlank, data))
			}
			if inAnchor && hidden == 0 {
				anchor.WriteString(data)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			attrs := tokenAttrs(z)
			if foreign(a) && tt == html.StartTagToken {
				outside++
			}
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken && !titleSeen
			case a == atom.Base:
				if h, ok := attrs["href"]; ok && !baseSeen && outside == 0 && page != nil {
					base, baseSeen = frozenBase(page, h), true
				}
			case a == atom.Head:
			case skipped(a):
				if tt == html.StartTagToken {
					skip++
					if hidesLinks(a) {
						hidden++
					}
				}
			case hidden > 0:
			case a == atom.A || a == atom.Area:
				endAnchor()
				if h, ok := attrs["href"]; ok {
					href, label, hint, inAnchor = h, attrs["aria-label"], attrs["title"], true
					if a == atom.Area || tt == html.SelfClosingTagToken {
						endAnchor()
					}
				}
			case block(a) && skip == 0:
				body.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if foreign(a) {
				outside = max(outside-1, 0)
			}
			switch {
			case a == atom.Title:
				if inTitle {
					inTitle, titleSeen = false, true
				}
			case a == atom.Head:
			case skipped(a):
				skip = max(skip-1, 0)
				if hidesLinks(a) {
					hidden = max(hidden-1, 0)
				}
			case hidden > 0:
			case a == atom.A:
				endAnchor()
			case block(a) && skip == 0:
				body.WriteByte('\n')
			}
		}
	}
	endAnchor()
	var doc document
	var titleCut bool
	doc.title, titleCut = capText(collapse(title.String()), maxTitleRunes)
	doc.text, doc.truncated = capText(lines(body.String()), maxTextRunes)
	set := newLinkSet()
	for _, l := range found {
		set.add(base, l.href, l.text, l.label, l.hint)
	}
	doc.links = set.out
	doc.truncated = doc.truncated || titleCut || set.truncated
	return doc
}

// foreign reports whether a's contents are no part of the HTML document's
// own elements: a template's, and SVG's and MathML's.
func foreign(a atom.Atom) bool {
	return a == atom.Template || a == atom.Svg || a == atom.Math
}

// hidesLinks reports whether links under a skipped element are left out
// too, as links() leaves them.
func hidesLinks(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Template, atom.Noscript:
		return true
	}
	return false
}

// tokenAttrs is the current tag's attributes, the first of each name.
func tokenAttrs(z *html.Tokenizer) map[string]string {
	out := map[string]string{}
	for {
		key, val, more := z.TagAttr()
		if k := string(key); k != "" {
			if _, ok := out[k]; !ok {
				out[k] = string(val)
			}
		}
		if !more {
			return out
		}
	}
}

// spaceToBlank maps whitespace to a space: source line breaks are
// whitespace; only blocks break lines.
func spaceToBlank(r rune) rune {
	if unicode.IsSpace(r) {
		return ' '
	}
	return r
}
