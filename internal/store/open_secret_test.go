package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
)

// A DATABASE_URL the driver cannot parse is named in the error (which
// quiver serve logs) with its password masked, in the query
// (?password=…) as in the user information. Before, pgx masked the user
// information's only, and the query's password was logged as it was.
func TestOpenErrorHidesPassword(t *testing.T) {
	const pw = "S3cretQueryPassw0rd"
	for _, u := range []string{
		"postgres://postgres@127.0.0.1:5432/x?password=" + pw + "&sslmode=bogus",
		"postgres://127.0.0.1:5432/x?sslmode=bogus&password=" + pw,
		"postgres://postgres:" + pw + "@127.0.0.1:5432/x?connect_timeout=abc",
		"postgresql://127.0.0.1/x?password=" + pw + "&connect_timeout=abc",
	} {
		_, err := store.Open(context.Background(), store.Options{DatabaseURL: u})
		if err == nil {
			t.Fatalf("%s: opened", u)
		}
		if strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error %q: want the URL named, without its password", err)
		}
	}
}
