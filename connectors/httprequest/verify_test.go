package httprequest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/httprequest"
)

// TestVerify: the auth step is refused, naming the field at fault, for every
// configuration a call would refuse; a usable one is accepted offline.
func TestVerify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config map[string]string
		field  string // "" when accepted
	}{
		{"none", map[string]string{"auth_type": "none"}, ""},
		{"unset", map[string]string{}, ""},
		{"bearer", map[string]string{"auth_type": "bearer", "token": "t"}, ""},
		{"header", map[string]string{"auth_type": "header", "token": "t", "header_name": "X-Api-Key"}, ""},
		{"header named Authorization", map[string]string{"auth_type": "header", "token": "Token t", "header_name": "authorization"}, ""},
		{"bearer without token", map[string]string{"auth_type": "bearer"}, "token"},
		{"header without token", map[string]string{"auth_type": "header", "header_name": "X-Api-Key"}, "token"},
		{"header without name", map[string]string{"auth_type": "header", "token": "t"}, "header_name"},
		{"invalid header name", map[string]string{"auth_type": "header", "token": "t", "header_name": "X Key"}, "header_name"},
		{"hop-by-hop header", map[string]string{"auth_type": "header", "token": "t", "header_name": "connection"}, "header_name"},
		{"reserved header", map[string]string{"auth_type": "header", "token": "t", "header_name": "Host"}, "header_name"},
		{"unknown auth type", map[string]string{"auth_type": "basic"}, "auth_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.config["base_url"] = "https://api.example.com"
			err := open().Verify(context.Background(), nil, tc.config)
			var fe *connectors.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || fe.Message == ""):
				t.Errorf("error %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

var _ connectors.Verifier = (*httprequest.Connector)(nil)
