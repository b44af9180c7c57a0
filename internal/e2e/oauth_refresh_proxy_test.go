package e2e

// Proxies in front of the local provider's token endpoint for the refresh
// tests: one that answers refreshes itself as a particular provider does,
// or holds them at a gate before they reach the provider, and one that
// holds the provider's answer to a refresh it has already granted.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// oacRefresh reports whether a token request's body is a refresh_token grant.
func oacRefresh(body []byte) bool {
	form, err := url.ParseQuery(string(body))
	return err == nil && form.Get("grant_type") == "refresh_token"
}

// oacTokenProxy is bodyProxy with each request's body read as a form.
func oacTokenProxy(t *testing.T, target string, answer func(w http.ResponseWriter, form url.Values) bool) string {
	t.Helper()
	return bodyProxy(t, target, func(w http.ResponseWriter, body []byte) bool {
		form, _ := url.ParseQuery(string(body))
		return answer(w, form)
	})
}

// oacHeldAnswer is a refresh the provider granted whose answer a proxy
// holds: the tokens it issued.
type oacHeldAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// oacHeldAnswerProxy serves a reverse proxy to target, its path kept, that
// lets each refresh_token grant through to target and then holds the
// target's answer until the test sends on release, or 30 s: entered gets
// the tokens granted as each answer is held. Unlike heldProxy's, a held
// refresh has been granted: the provider has rotated the refresh token
// and issued the pair Quiver is still waiting for. It returns the URL to
// use in target's place.
func oacHeldAnswerProxy(t *testing.T, target string) (u string, entered chan oacHeldAnswer, release chan struct{}) {
	t.Helper()
	entered, release = make(chan oacHeldAnswer, 8), make(chan struct{}, 8)
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	hold := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: to.Scheme, Host: to.Host})
	hold.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var granted oacHeldAnswer
		_ = json.Unmarshal(body, &granted)
		entered <- granted
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		return nil
	}
	pass := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: to.Scheme, Host: to.Host})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if oacRefresh(body) {
			hold.ServeHTTP(w, r)
			return
		}
		pass.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL + to.Path, entered, release
}
