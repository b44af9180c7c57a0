package browser_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/browser"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

const page = `<!doctype html>
<html><head><title>  The   Title </title>
<style>body { color: red }</style>
<script>var secret = "do not show";</script>
</head>
<body>
<nav><a href="/home">Home</a> menu text</nav>
<h1>Hello,
   world</h1>
<p>First   paragraph with <b>bold</b> text and a <a href="docs/intro?x=1#top">relative link</a>.</p>
<noscript>enable javascript</noscript>
<ul><li>one</li><li>two</li></ul>
<a href="https://other.example/abs">Absolute</a>
<a href="mailto:someone@example.com">mail</a>
<a href="javascript:alert(1)">js</a>
<a href="https://other.example/abs">Absolute again</a>
<a href="/img" aria-label="Labelled"><img src="x.png"></a>
</body></html>`

func call(t *testing.T, c *browser.Connector, ctx context.Context, url string) (connectors.Result, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"url": url})
	return c.Call(ctx, &connectors.Tool{}, "fetch_page", args)
}

func TestFetchPageExtracts(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/pages/article", http.StatusFound)
	})
	mux.HandleFunc("/pages/article", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), srv.URL+"/start")
	if err != nil {
		t.Fatal(err)
	}
	var p browser.Page
	if err := json.Unmarshal(res.Content, &p); err != nil {
		t.Fatal(err)
	}
	if res.IsError || p.Status != 200 || p.URL != srv.URL+"/pages/article" {
		t.Errorf("status/url = %d %s (is_error %t)", p.Status, p.URL, res.IsError)
	}
	if p.Title != "The Title" {
		t.Errorf("title = %q", p.Title)
	}
	wantText := "Hello, world\nFirst paragraph with bold text and a relative link.\none\ntwo\nAbsolute mail js Absolute again"
	if p.Text != wantText {
		t.Errorf("text =\n%s\nwant\n%s", p.Text, wantText)
	}
	for _, banned := range []string{"do not show", "color: red", "menu text", "enable javascript"} {
		if strings.Contains(p.Text, banned) {
			t.Errorf("text contains %q", banned)
		}
	}
	want := []browser.Link{
		{Text: "Home", Href: srv.URL + "/home"},
		{Text: "relative link", Href: srv.URL + "/pages/docs/intro?x=1"},
		{Text: "Absolute", Href: "https://other.example/abs"},
		{Text: "Labelled", Href: srv.URL + "/img"},
	}
	if len(p.Links) != len(want) {
		t.Fatalf("links = %+v", p.Links)
	}
	for i := range want {
		if p.Links[i] != want[i] {
			t.Errorf("link %d = %+v, want %+v", i, p.Links[i], want[i])
		}
	}
}

func TestFetchPageCharsetAndCaps(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/latin1":
			w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
			w.Write([]byte("<html><head><title>Caf\xe9</title></head><body>na\xefve</body></html>"))
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("a", 4000))
		case "/missing":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<title>Not found</title><p>nothing here</p>")
		}
	}))
	t.Cleanup(srv.Close)
	c := browser.New(browser.Options{AllowPrivate: true, MaxBytes: 1000})

	res, err := call(t, c, context.Background(), srv.URL+"/latin1")
	if err != nil {
		t.Fatal(err)
	}
	var p browser.Page
	json.Unmarshal(res.Content, &p)
	if p.Title != "Café" || p.Text != "naïve" {
		t.Errorf("latin1 page = %q %q", p.Title, p.Text)
	}

	res, err = call(t, c, context.Background(), srv.URL+"/big")
	if err != nil {
		t.Fatal(err)
	}
	p = browser.Page{}
	json.Unmarshal(res.Content, &p)
	if len(p.Text) != 1000 || !p.Truncated {
		t.Errorf("big page: %d chars, truncated %t", len(p.Text), p.Truncated)
	}

	res, err = call(t, c, context.Background(), srv.URL+"/missing")
	if err != nil {
		t.Fatal(err)
	}
	p = browser.Page{}
	json.Unmarshal(res.Content, &p)
	if !res.IsError || p.Status != 404 || p.Title != "Not found" {
		t.Errorf("404 page: is_error %t, %+v", res.IsError, p)
	}
}

func TestFetchPageRefuses(t *testing.T) {
	t.Parallel()
	c := browser.New(browser.Options{AllowPrivate: true})
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "example.com", "javascript:alert(1)", "http://"} {
		if _, err := call(t, c, context.Background(), u); connectortest.Kind(t, err) != connectors.KindRejected {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := c.Call(context.Background(), &connectors.Tool{}, "click", json.RawMessage(`{}`)); connectortest.Kind(t, err) != connectors.KindUnknownAction {
		t.Errorf("unknown action: %v", err)
	}
}

// TestFetchPageSSRFGuard: a literal private address is refused as a bad
// argument before anything is dialled; a name is checked where it is
// dialled (it may resolve elsewhere later), as nothing was sent: unreachable.
func TestFetchPageSSRFGuard(t *testing.T) {
	t.Parallel()
	hits := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
		io.WriteString(w, "<title>inside</title>")
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	guarded := browser.New(browser.Options{})
	for _, u := range []string{srv.URL, "http://[::1]:" + port + "/", "http://169.254.169.254/latest/meta-data/", "https://10.0.0.1/"} {
		if _, err := call(t, guarded, context.Background(), u); connectortest.Kind(t, err) != connectors.KindRejected {
			t.Errorf("%s: %v", u, err)
		}
	}
	_, err := call(t, guarded, context.Background(), "http://localhost:"+port+"/")
	if got := connectortest.Kind(t, err); got != connectors.KindUnreachable {
		t.Errorf("kind = %s (%v)", got, err)
	}
	if len(hits) != 0 {
		t.Error("the guarded request reached the server")
	}
}

// TestFetchPageNoReferer: a redirect does not tell its target the page it
// came from (whose query may carry a token), across origins or within one.
func TestFetchPageNoReferer(t *testing.T) {
	t.Parallel()
	referers := make(chan string, 4)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		referers <- r.Header.Get("Referer")
		io.WriteString(w, "<title>landed</title>")
	}))
	t.Cleanup(target.Close)
	start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			referers <- r.Header.Get("Referer")
			http.Redirect(w, r, target.URL+"/landing", http.StatusFound)
			return
		}
		http.Redirect(w, r, "/hop", http.StatusFound)
	}))
	t.Cleanup(start.Close)
	res, err := call(t, browser.New(browser.Options{AllowPrivate: true}), context.Background(), start.URL+"/go?token=s3cret")
	if err != nil || !strings.Contains(string(res.Content), `"title":"landed"`) {
		t.Fatalf("fetch: %s %v", res.Content, err)
	}
	for i := 0; i < 2; i++ {
		if r := <-referers; r != "" {
			t.Errorf("hop %d saw Referer %q", i+1, r)
		}
	}
}

func TestFetchPageTransportFailures(t *testing.T) {
	t.Parallel()
	c := browser.New(browser.Options{AllowPrivate: true})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		if _, err := call(t, c, context.Background(), "http://"+connectortest.ClosedAddr(t)+"/"); connectortest.Kind(t, err) != connectors.KindUnreachable {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("hangs past deadline", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.HangingServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), connectortest.HangDeadline)
		defer cancel()
		if _, err := call(t, c, ctx, srv.URL); connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("hang: %v", err)
		}
	})
	t.Run("closed mid-response", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.CutServer(t, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n<html><title>cut")
		if _, err := call(t, c, context.Background(), srv.URL); connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("cut: %v", err)
		}
	})
}
