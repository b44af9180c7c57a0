package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// heldProxy serves a reverse proxy to target, its path kept, that holds
// each request hold picks (given its body) until the test sends on release,
// or 30 s: entered gets a value as each held request arrives. It returns the
// URL to use in target's place.
func heldProxy(t *testing.T, target string, hold func(body []byte) bool) (u string, entered, release chan struct{}) {
	t.Helper()
	entered, release = make(chan struct{}, 8), make(chan struct{}, 8)
	u = bodyProxy(t, target, func(_ http.ResponseWriter, body []byte) bool {
		if hold(body) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
		}
		return false
	})
	return u, entered, release
}

// bodyProxy serves a reverse proxy to target, its path kept, in which
// answer sees each request's body first: it answers the request itself and
// returns true, or returns false to let it through to target (it may hold
// it first). It returns the URL to use in target's place.
func bodyProxy(t *testing.T, target string, answer func(w http.ResponseWriter, body []byte) bool) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: to.Scheme, Host: to.Host})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if answer(w, body) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL + to.Path
}
