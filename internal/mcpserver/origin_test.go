package mcpserver

import "testing"

func TestOriginAllowed(t *testing.T) {
	s := &Server{opts: Options{PublicURL: "https://quiver.example.com"}}
	for _, tc := range []struct {
		origin, host string
		ok           bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"https://quiver.example.com", "10.0.0.5:8080", true},          // the public origin behind a proxy
		{"https://quiver.example.com:443", "10.0.0.5:8080", true},      // its default port spelled out
		{"https://QUIVER.example.com", "10.0.0.5:8080", true},          // names are case-insensitive
		{"https://quiver.example.com", "quiver.example.com:443", true}, // a proxy forwarding the port
		{"http://quiver.example.com", "quiver.example.com", true},      // same host, scheme unknown behind TLS
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://quiver.example.com", "10.0.0.5:8080", false}, // the public name, another scheme
		{"https://quiver.example.com:8443", "10.0.0.5:8080", false},
		{"https://evil.example", "127.0.0.1:8080", false},
		{"http://127.0.0.1:8081", "127.0.0.1:8080", false},
		{"null", "127.0.0.1:8080", false},
		{"file://", "127.0.0.1:8080", false},
		{"not a url", "127.0.0.1:8080", false},
	} {
		if got := s.originAllowed(tc.origin, tc.host); got != tc.ok {
			t.Errorf("originAllowed(%q, host %q) = %v, want %v", tc.origin, tc.host, got, tc.ok)
		}
	}
	withPort := &Server{opts: Options{PublicURL: "https://quiver.example.com:443"}}
	if !withPort.originAllowed("https://quiver.example.com", "10.0.0.5:8080") {
		t.Error("a public URL with its default port spelled out refuses its own origin")
	}
}
