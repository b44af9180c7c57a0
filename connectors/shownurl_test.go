package connectors

import "testing"

func TestShownURL(t *testing.T) {
	for in, want := range map[string]string{
		// Nothing to hide.
		"https://mcp.example.com/mcp":                    "https://mcp.example.com/mcp",
		"https://mcp.example.com/v1/2025-06-18/mcp2/":    "https://mcp.example.com/v1/2025-06-18/mcp2/",
		"https://mcp.example.com/a-long-path-name/mcp":   "https://mcp.example.com/a-long-path-name/mcp",
		"http://[::1]:8080/mcp":                          "http://[::1]:8080/mcp",
		"https://x.test/mcp?":                            "https://x.test/mcp?",
		"https://x.test/mcp#frag":                        "https://x.test/mcp",
		"https://abcdef0123456789abcdef.example.com/mcp": "https://abcdef0123456789abcdef.example.com/mcp",
		// The query: values masked, keys kept.
		"https://mcp.example.com/mcp?apiKey=tvly-123":         "https://mcp.example.com/mcp?apiKey=****",
		"https://x.test/mcp/?a=1&b=&flag&c=x%3Dy":             "https://x.test/mcp/?a=****&b=****&****&c=****",
		"https://x.test/mcp?k=v#frag":                         "https://x.test/mcp?k=****",
		"https://x.test/mcp?a=1&&b=2":                         "https://x.test/mcp?a=****&&b=****",
		"http://127.0.0.1:8080/mcp?token=abc&token=def&x=%20": "http://127.0.0.1:8080/mcp?token=****&token=****&x=****",
		// User information, whole.
		"https://user:s3cret@mcp.example.com/mcp": "https://****@mcp.example.com/mcp",
		"https://ghp_token@mcp.example.com:8443/": "https://****@mcp.example.com:8443/",
		"https://a@b@mcp.example.com/mcp?k=v":     "https://****@mcp.example.com/mcp?k=****",
		// A token in the path.
		"https://mcp.zapier.example/api/mcp/s/NjQ5YjM1ZTgtZDk0Ny00/mcp":                   "https://mcp.zapier.example/api/mcp/s/****/mcp",
		"https://mcp.example.com/server/550e8400-e29b-41d4-a716-446655440000/mcp?user=me": "https://mcp.example.com/server/****/mcp?user=****",
		"https://mcp.example.com/sk-ant-0123456789abcdef":                                 "https://mcp.example.com/****",
		"https://mcp.example.com/s/ZkqvaTrxWyQeLmNoPq/mcp":                                "https://mcp.example.com/s/****/mcp",
		"https://mcp.example.com/mcp/ghp_AbCdEfGhIjKlMnOpQrStUvWxYz":                      "https://mcp.example.com/mcp/****",
		// Percent-escapes are not digits.
		"https://mcp.example.com/my%20long%20page%20name/": "https://mcp.example.com/my%20long%20page%20name/",
	} {
		if got := ShownURL(in); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", in, got, want)
		}
		if got, hides := HoldsSecret(in), ShownURL(in) != stripFragment(in); got != hides {
			t.Errorf("HoldsSecret(%q) = %v, want %v", in, got, hides)
		}
	}
}

func stripFragment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' {
			return s[:i]
		}
	}
	return s
}
