package mcp

import (
	"net/http"
	"testing"
)

func TestResourceMetadataAmongChallenges(t *testing.T) {
	const m = "https://a.example/.well-known/oauth-protected-resource"
	for _, v := range []string{
		`Bearer resource_metadata="` + m + `", scope="read write"`,
		`DPoP algs="ES256 PS256", Bearer resource_metadata="` + m + `", scope="read write"`,
		`Bearer error_description="a, Basic b", resource_metadata="` + m + `", scope="read write"`,
		`Negotiate dGVzdA==, Bearer resource_metadata=` + m + `, scope="read write"`,
		`Basic realm="x",Bearer scope="read write",resource_metadata="` + m + `"`,
	} {
		h := http.Header{"Www-Authenticate": {v}}
		if got, scope := resourceMetadata(h); got != m || scope != "read write" {
			t.Errorf("%s: resource_metadata %q, scope %q", v, got, scope)
		}
	}
	if got, _ := resourceMetadata(http.Header{"Www-Authenticate": {`DPoP algs="ES256", Basic realm="x"`}}); got != "" {
		t.Errorf("no resource_metadata: got %q", got)
	}
}
