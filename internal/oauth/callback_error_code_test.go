package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/toolconfig"
)

// TestCallbackErrorCodeOfNothingShowable: a provider error whose code
// keeps none of RFC 6749's characters once sanitized (markup alone) is
// told as an unknown error, not as "the error , so the tool…".
func TestCallbackErrorCodeOfNothingShowable(t *testing.T) {
	s := newSetup(t, "http://127.0.0.1:1/token", &toolconfig.Token{AccessToken: "at", RefreshToken: "rt"})
	s.awaiting(t)
	o := s.flow.Callback(context.Background(), url.Values{"state": {s.link(t)}, "error": {`<>"'`}})
	if o.Status != http.StatusBadGateway || o.Reason != "provider_error" {
		t.Fatalf("callback: %d %s", o.Status, o.Reason)
	}
	if !strings.Contains(o.Message, "the error unknown_error,") || strings.Contains(o.Message, "error ,") {
		t.Fatalf("message %q", o.Message)
	}
}
