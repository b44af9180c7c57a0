package connectors

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
)

// An error naming a tool's endpoint shows it as ShownURL does,
// whether the endpoint is written out plainly or quoted, as a *url.Error
// quotes it, and keeps its chain.
func TestHideURLs(t *testing.T) {
	for _, endpoint := range []string{
		"https://h.example/mcp?key=Zk3q9v0aTr51",
		`https://h.example/mcp?key=Zk3"q9v0aTr51`,
		"https://h.example/api/mcp/s/Zk3q9v0aTr51xW8yQe/mcp",
	} {
		for _, err := range []error{
			&url.Error{Op: "Post", URL: endpoint, Err: io.EOF},
			// The URL a redirect led to, which is not the endpoint.
			fmt.Errorf("sending %q: %w", "initialize", &url.Error{Op: "Post", URL: strings.Replace(endpoint, "/mcp", "/mcp/", 1), Err: io.EOF}),
			fmt.Errorf("sending %q to %s: %w", "initialize", endpoint, io.EOF),
		} {
			got := HideURLs(err, endpoint)
			if msg := got.Error(); strings.Contains(msg, "Zk3") {
				t.Errorf("HideURLs(%v) reads %q", err, msg)
			}
			if !errors.Is(got, io.EOF) {
				t.Errorf("HideURLs(%v) lost its chain", err)
			}
		}
	}
	// A redirect's URL that is a prefix of the endpoint does not leave the
	// rest of the endpoint's key shown; every *url.Error of a joined error
	// is hidden; a key quoted inside a longer quoted string is too.
	endpoint := "https://h.example/mcp?key=Zk3q9v0aTr51LEAKTAIL"
	for _, err := range []error{
		fmt.Errorf("%w; then %s", &url.Error{Op: "Post", URL: "https://h.example/mcp?key=Zk3q9v0aTr51", Err: io.EOF}, endpoint),
		errors.Join(&url.Error{Op: "Post", URL: "https://h.example/a/?key=Zk3q9v0aTr51", Err: io.EOF},
			&url.Error{Op: "Post", URL: "https://h.example/b/?key=Zk3q9v0aTr51", Err: io.EOF}),
	} {
		if msg := HideURLs(err, endpoint).Error(); strings.Contains(msg, "Zk3") || strings.Contains(msg, "LEAKTAIL") {
			t.Errorf("HideURLs(%v) reads %q", err, msg)
		}
	}
	quoted := `https://h.example/mcp?key=Zk3"q9LEAKTAIL`
	body := fmt.Errorf("the server answered %s", fmt.Sprintf(`{"detail":%q}`, "bad url "+quoted))
	if msg := HideURLs(body, quoted).Error(); strings.Contains(msg, "LEAKTAIL") {
		t.Errorf("a quoted key inside a longer string: %q", msg)
	}

	plain := errors.New("no endpoint here")
	if got := HideURLs(plain, "https://h.example/mcp"); got != plain {
		t.Errorf("an endpoint with nothing to hide: got %v, want the error as it was", got)
	}
}
