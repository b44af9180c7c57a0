package config

import (
	"strings"
	"testing"
)

// TestBaseURLsTakeNoQueryOrFragment: QUIVER_PUBLIC_URL and
// QUIVER_TAVILY_BASE_URL are bases that paths are appended to (the OAuth
// redirect URI is QUIVER_PUBLIC_URL + /api/v1/oauth/callback), so a query
// or fragment in them would end up before the path ("http://q/?a=b" made
// the redirect URI http://q/?a=b/api/v1/oauth/callback), and credentials
// in the public URL would be shown to every provider.
func TestBaseURLsTakeNoQueryOrFragment(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"QUIVER_PUBLIC_URL", "https://q.example.com/?a=b", "query"},
		{"QUIVER_PUBLIC_URL", "https://q.example.com/#top", "fragment"},
		{"QUIVER_PUBLIC_URL", "https://q.example.com?", "query"},
		{"QUIVER_PUBLIC_URL", "https://user:pw@q.example.com", "credentials"},
		{"QUIVER_TAVILY_BASE_URL", "https://tavily.example.com?key=1", "query"},
		{"QUIVER_TAVILY_BASE_URL", "https://tavily.example.com/#x", "fragment"},
		{"QUIVER_PUBLIC_URL", "https://q.example.com:99999", "port"},
		{"QUIVER_TAVILY_BASE_URL", "https://tavily.example.com:0", "port"},
	} {
		_, err := parse(map[string]string{tc.name: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.name+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: err = %v, want one naming the variable and its %s", tc.name, tc.value, err, tc.want)
		}
	}
	// A path (Quiver behind a proxy under a prefix) and a trailing slash
	// are fine: the redirect URI is the path's, with one slash.
	for value, want := range map[string]string{
		"https://q.example.com/quiver/": "https://q.example.com/quiver",
		"https://q.example.com//":       "https://q.example.com",
		"http://localhost:19180":        "http://localhost:19180",
	} {
		c, err := parse(map[string]string{"QUIVER_PUBLIC_URL": value})
		if err != nil || c.PublicURL != want {
			t.Errorf("QUIVER_PUBLIC_URL=%q: %v, %v; want %q", value, c, err, want)
		}
	}
}

// TestBodyLimitBounded: a body limit is read whole into memory, and the
// largest int64 overflowed a reader's limit + 1 (every agent MCP message
// then read as empty: 400 Parse error), so QUIVER_BODY_LIMIT has an upper
// bound, and its refusal says both bounds.
func TestBodyLimitBounded(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "1073741825", "1023", "1MiB", "-1"} {
		_, err := parse(map[string]string{"QUIVER_BODY_LIMIT": v})
		if err == nil || !strings.Contains(err.Error(), "QUIVER_BODY_LIMIT: ") || !strings.Contains(err.Error(), "1073741824") {
			t.Errorf("QUIVER_BODY_LIMIT=%q: err = %v, want a refusal naming 1024 to 1073741824", v, err)
		}
	}
	for _, v := range []string{"1024", "1073741824"} {
		if c, err := parse(map[string]string{"QUIVER_BODY_LIMIT": v}); err != nil || c.BodyLimit <= 0 {
			t.Errorf("QUIVER_BODY_LIMIT=%q: %v, %v", v, c, err)
		}
	}
}
