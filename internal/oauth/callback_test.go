package oauth

import (
	"net/url"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
)

// TestCheckIssuer pins RFC 9207's rules: iss, whenever present, must be
// the tool's discovered issuer exactly, and is required when the server
// advertised it; a catalog provider has no issuer to compare with.
func TestCheckIssuer(t *testing.T) {
	const issuer = "https://as.example/tenant"
	discovered := func(advertised bool) *store.Tool {
		flag := ""
		if advertised {
			flag = `,"authorization_response_iss_parameter_supported":true`
		}
		return &store.Tool{Config: `{"url":"https://mcp.example","_oauth":{"issuer":"` + issuer +
			`","authorization_endpoint":"https://as.example/authorize","token_endpoint":"https://as.example/token","client_id":"c"` + flag + `}}`}
	}
	catalogTool := &store.Tool{Config: `{}`}
	for _, c := range []struct {
		name string
		tool *store.Tool
		iss  []string // nil: absent
		want error
	}{
		{"advertised, same", discovered(true), []string{issuer}, nil},
		{"advertised, absent", discovered(true), nil, errIssuerMissing},
		{"advertised, other", discovered(true), []string{"https://evil.example"}, errIssuerMismatch},
		{"advertised, trailing slash", discovered(true), []string{issuer + "/"}, errIssuerMismatch},
		{"advertised, empty", discovered(true), []string{""}, errIssuerMismatch},
		{"advertised, twice", discovered(true), []string{issuer, issuer}, errIssuerMismatch},
		{"not advertised, absent", discovered(false), nil, nil},
		{"not advertised, same", discovered(false), []string{issuer}, nil},
		{"not advertised, other", discovered(false), []string{"https://evil.example"}, errIssuerMismatch},
		{"catalog provider, any", catalogTool, []string{"https://evil.example"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := url.Values{"code": {"x"}, "state": {"y"}}
			if c.iss != nil {
				q["iss"] = c.iss
			}
			if got := checkIssuer(c.tool, q); got != c.want {
				t.Fatalf("checkIssuer = %v, want %v", got, c.want)
			}
		})
	}
}
