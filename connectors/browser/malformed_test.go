package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/browser"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

// serve answers every request with body as text/html.
func serve(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A page nested deeper than the HTML parser takes (512 open elements, as
// tag soup with unclosed divs easily is) is still read, not answered as
// an empty page.
func TestFetchPageDeeplyNested(t *testing.T) {
	t.Parallel()
	body := "<html><head><title>Deep</title><script>var hidden = 1;</script></head><body>" +
		strings.Repeat("<div>", 600) + "<p>Deep text</p><nav>menu</nav><a href=\"/x?a=1#f\">the link</a>"
	srv := serve(t, body)
	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/page")
	if err != nil {
		t.Fatal(err)
	}
	var p browser.Page
	if err := json.Unmarshal(res.Content, &p); err != nil {
		t.Fatal(err)
	}
	if p.Title != "Deep" || p.Text != "Deep text\nthe link" {
		t.Errorf("title %q, text %q", p.Title, p.Text)
	}
	if len(p.Links) != 1 || p.Links[0].Href != srv.URL+"/x?a=1" || p.Links[0].Text != "the link" {
		t.Errorf("links = %+v", p.Links)
	}
}

// What a page yields is bounded in every field, so that the result stays
// well under the 8 MiB a call's result may hold: a huge title, link text
// or href is cut (or the link left out), and the page marked truncated,
// rather than the whole page lost as result_too_large. <, > and & are
// not escaped into six bytes each.
func TestFetchPageBoundedFields(t *testing.T) {
	t.Parallel()
	body := "<html><head><title>" + strings.Repeat("<", 1<<20) + "</title></head><body>" +
		"<a href=\"/long?" + strings.Repeat("&", 1<<20) + "\">long href</a>" +
		"<a href=\"/short\">" + strings.Repeat("& ", 1<<19) + "</a></body></html>"
	srv := serve(t, body)
	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) > 1<<20 {
		t.Errorf("result is %d bytes", len(res.Content))
	}
	var p browser.Page
	if err := json.Unmarshal(res.Content, &p); err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || utf8.RuneCountInString(p.Title) > 1000 || !strings.HasPrefix(p.Title, "<<<") {
		t.Errorf("truncated %t, title of %d runes", p.Truncated, utf8.RuneCountInString(p.Title))
	}
	if len(p.Links) != 1 || p.Links[0].Href != srv.URL+"/short" || utf8.RuneCountInString(p.Links[0].Text) > 300 {
		t.Errorf("%d links, first %.80q", len(p.Links), p.Links)
	}

	// A thousand links of 2 KB of & each: 2 MB of page, 12 MB of JSON
	// if each & became \u0026.
	var many strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&many, "<a href=\"/%d?%s\">%d</a>", i, strings.Repeat("&", 2000), i)
	}
	srv = serve(t, many.String())
	res, err = call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) > 4<<20 {
		t.Errorf("result of a thousand long links is %d bytes", len(res.Content))
	}
	p = browser.Page{}
	if err := json.Unmarshal(res.Content, &p); err != nil || len(p.Links) != 1000 {
		t.Errorf("%d links (%v)", len(p.Links), err)
	}
}

// A url with user information is refused: the browser sends no
// credentials (net/http would send them as Basic authorization), and the
// page's url, kept and replayed with the result, would show them.
func TestFetchPageRefusesUserinfo(t *testing.T) {
	t.Parallel()
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(srv.Close)
	for _, u := range []string{strings.Replace(srv.URL, "http://", "http://user:pass@", 1), strings.Replace(srv.URL, "http://", "http://user@", 1)} {
		_, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), u)
		var e *connectors.Error
		if !errors.As(err, &e) || e.Kind != connectors.KindRejected || e.Argument != "url" {
			t.Errorf("%s: %v", u, err)
		}
	}
	select {
	case a := <-got:
		t.Errorf("the page was fetched, Authorization %q", a)
	default:
	}
}

// A redirect to a URL with user information is followed without it: the
// browser sends no credentials, neither the caller's nor ones a page hands
// it (net/http would send them as Basic authorization to the redirect's
// target), and the page's url shows none.
func TestFetchPageRedirectDropsUserinfo(t *testing.T) {
	t.Parallel()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go" {
			http.Redirect(w, r, strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1)+"/landing", http.StatusFound)
			return
		}
		io.WriteString(w, "<title>Authorization="+r.Header.Get("Authorization")+"</title>")
	}))
	t.Cleanup(srv.Close)
	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/go")
	if err != nil {
		t.Fatal(err)
	}
	var p browser.Page
	if err := json.Unmarshal(res.Content, &p); err != nil {
		t.Fatal(err)
	}
	if p.Title != "Authorization=" || p.URL != srv.URL+"/landing" || strings.Contains(string(res.Content), "s3cret") {
		t.Errorf("title %q, url %q: want the landing page fetched without credentials", p.Title, p.URL)
	}
}

// A page that redirects to a server that cannot be reached (the
// connection refused, or the name unknown, which egress.IsConnectFailure
// tells alike) was not fetched, and what reached
// the first server was a GET that answered: the call is
// tool_unreachable, whose key is released for a retry, not
// tool_outcome_unknown, which would hold its key terminal.
func TestFetchPageRedirectToUnreachable(t *testing.T) {
	t.Parallel()
	closed := "http://" + connectortest.ClosedAddr(t) + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	for _, to := range []string{closed} {
		_, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/go?to="+url.QueryEscape(to))
		if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
			t.Errorf("redirect to %s: kind %s (%v)", to, k, err)
		} else if strings.Contains(err.Error(), string(connectors.KindOutcomeUnknown)) {
			t.Errorf("error names the outcome unknown: %v", err)
		}
	}
}

// A page served without a Content-Type is read by what it holds: HTML as
// HTML, and bytes that are not text (an image, an archive) not as text.
func TestFetchPageWithoutContentType(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no sniffing by the test server
		if r.URL.Path == "/png" {
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01binary text"))
			return
		}
		if r.URL.Path == "/span" { // sniffed as text/plain, still HTML
			io.WriteString(w, "<span>fragment</span>")
			return
		}
		io.WriteString(w, "<!doctype html><title>Untyped</title><p>hello</p>")
	}))
	t.Cleanup(srv.Close)
	c := browser.New(browser.Options{AllowPrivate: true})
	for path, want := range map[string][2]string{"/png": {"", ""}, "/html": {"Untyped", "hello"}, "/span": {"", "fragment"}} {
		res, err := call(t, c, context.Background(), srv.URL+path)
		if err != nil {
			t.Fatal(err)
		}
		var p browser.Page
		if err := json.Unmarshal(res.Content, &p); err != nil {
			t.Fatal(err)
		}
		if p.Title != want[0] || p.Text != want[1] {
			t.Errorf("%s: title %q, text %q", path, p.Title, p.Text)
		}
	}
}
