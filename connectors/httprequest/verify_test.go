package httprequest_test

import (
	"context"
	"errors"
	"strings"
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
		{"accept-encoding header", map[string]string{"auth_type": "header", "token": "t", "header_name": "accept-encoding"}, "header_name"},
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

// TestVerifyBaseURL: the base_url step (the one without auth_type) is
// refused, on base_url, when the URL carries credentials, or when the guard
// would refuse its host: a literal private address, or a name resolving
// only to private addresses. A name that does not resolve is accepted.
func TestVerifyBaseURL(t *testing.T) {
	t.Parallel()
	guarded, open := httprequest.New(httprequest.Options{}), open()
	for _, tc := range []struct {
		base            string
		guarded, opened bool // refused by each
	}{
		{"https://api.example.com/v1", false, false},
		{"https://quiver-no-such-host.invalid/", false, false},
		{"http://8.8.8.8/", false, false},
		{"http://169.254.169.254/latest/meta-data/", true, false},
		{"http://127.0.0.1:8080", true, false},
		{"http://[::1]:8080/", true, false},
		{"http://[::ffff:10.0.0.1]/", true, false},
		{"http://0.0.0.0:80/", true, false},
		{"http://localhost:8080/", true, false},
		{"http://u:p@api.example.com/", true, true},
		{"https://token@api.example.com/", true, true},
		{"http://u:p@127.0.0.1/", true, true},
	} {
		t.Run(tc.base, func(t *testing.T) {
			for _, c := range []struct {
				conn    *httprequest.Connector
				refused bool
			}{{guarded, tc.guarded}, {open, tc.opened}} {
				err := c.conn.Verify(context.Background(), nil, map[string]string{"base_url": tc.base})
				var fe *connectors.FieldError
				switch {
				case !c.refused && err != nil:
					t.Errorf("refused: %v", err)
				case c.refused && (!errors.As(err, &fe) || fe.Field != "base_url" || fe.Message == ""):
					t.Errorf("error %v, want a FieldError on base_url", err)
				case fe != nil && (strings.Contains(fe.Message, ":p@") || strings.Contains(fe.Message, "token")):
					t.Errorf("message %q shows the credentials", fe.Message)
				}
			}
		})
	}
	// At the auth step the base URL was accepted already: it is not checked
	// (nor looked up) again.
	if err := guarded.Verify(context.Background(), nil, map[string]string{"base_url": "http://127.0.0.1/", "auth_type": "none"}); err != nil {
		t.Errorf("auth step: %v", err)
	}
}

var _ connectors.Verifier = (*httprequest.Connector)(nil)
