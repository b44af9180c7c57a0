package oauth

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// resourceTransport names the resource in a refresh_token grant sent to the
// token endpoint, keeps one the grant already names, and leaves every other
// request as it was sent.
func TestResourceTransport(t *testing.T) {
	var got []string
	rt := &resourceTransport{tokenURL: "https://as.test/token", resource: "https://mcp.test/s/k/mcp",
		base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			if r.ContentLength != int64(len(b)) {
				t.Errorf("Content-Length %d for a body of %d bytes", r.ContentLength, len(b))
			}
			got = append(got, r.URL.String()+" "+string(b))
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})}
	send := func(method, u, body string) {
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	send("POST", "https://as.test/token", "grant_type=refresh_token&refresh_token=rt1")
	send("POST", "https://as.test/token", "grant_type=refresh_token&refresh_token=rt2&resource=https%3A%2F%2Fother.test")
	send("POST", "https://as.test/token", "grant_type=authorization_code&code=c")
	send("POST", "https://as.test/register", "grant_type=refresh_token&refresh_token=rt3")
	send("GET", "https://as.test/token", "")
	want := []string{
		"https://as.test/token grant_type=refresh_token&refresh_token=rt1&resource=" + url.QueryEscape("https://mcp.test/s/k/mcp"),
		"https://as.test/token grant_type=refresh_token&refresh_token=rt2&resource=https%3A%2F%2Fother.test",
		"https://as.test/token grant_type=authorization_code&code=c",
		"https://as.test/register grant_type=refresh_token&refresh_token=rt3",
		"https://as.test/token ",
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("request %d sent as %q, want %q", i, got[min(i, len(got)-1)], want[i])
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
