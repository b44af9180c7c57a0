package connectors

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// HideURLs returns err with every tool URL it names shown as ShownURL shows
// it: the URL of each *url.Error in its tree (net/http's client wraps every
// failure in one, naming the URL a redirect led to, not necessarily the one
// requested) and the URLs given (an endpoint an error's text names
// otherwise). A *url.Error's URL is masked in place, and the text of the
// whole error is replaced too, since a wrapping error (fmt.Errorf) keeps
// its message as it was rendered. The chain stays for errors.Is and
// errors.As. An error that names nothing to hide is returned as it is.
func HideURLs(err error, urls ...string) error {
	if err == nil {
		return nil
	}
	var pairs [][2]string
	hide := func(u string) {
		if !HoldsSecret(u) {
			return
		}
		shown := ShownURL(u)
		// Also as quoted (%q, JSON) without the quotes, which matches
		// inside a longer quoted string too.
		q, qs := strconv.Quote(u), strconv.Quote(shown)
		pairs = append(pairs, [2]string{q[1 : len(q)-1], qs[1 : len(qs)-1]}, [2]string{u, shown})
	}
	for _, u := range urls {
		hide(u)
	}
	eachURLError(err, func(ue *url.Error) {
		hide(ue.URL)
		ue.URL = ShownURL(ue.URL)
	})
	if pairs == nil {
		return err
	}
	// A Replacer takes, at each place, the first old string in its
	// arguments that matches, not the longest: longest first, so that a URL
	// that is a prefix of another (a redirect that dropped part of the
	// query) does not leave the rest of the other shown.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	flat := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		flat = append(flat, p[0], p[1])
	}
	return &hiddenURLs{err: err, replacer: strings.NewReplacer(flat...)}
}

// hiddenURLs is an error whose text has its URLs' secrets masked.
type hiddenURLs struct {
	err      error
	replacer *strings.Replacer
}

func (h *hiddenURLs) Error() string { return h.replacer.Replace(h.err.Error()) }
func (h *hiddenURLs) Unwrap() error { return h.err }

// HideURLsIn masks in s what Error masks: the text of an error further down
// the chain (whose own Error is unmasked) shown on its own.
func (h *hiddenURLs) HideURLsIn(s string) string { return h.replacer.Replace(s) }

// URLHider is the error HideURLs returns when it masked something: code
// that shows the text of an error below it in the chain passes that text
// through HideURLsIn.
type URLHider interface {
	error
	HideURLsIn(s string) string
}

// eachURLError calls fn with every *url.Error in err's tree.
func eachURLError(err error, fn func(*url.Error)) {
	if ue, ok := err.(*url.Error); ok {
		fn(ue)
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		if next := e.Unwrap(); next != nil {
			eachURLError(next, fn)
		}
	case interface{ Unwrap() []error }:
		for _, next := range e.Unwrap() {
			eachURLError(next, fn)
		}
	}
}
