package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A database that ran out of disk, memory or connections, takes no changes
// (read-only), or stopped the statement (a timeout, a deadlock) answered,
// and applied nothing: unavailable (503), not a bug (500), and for a write not
// "interrupted" (a change that may have been applied). A failed disk I/O
// may have applied a write.
func TestInterpretOutOfResources(t *testing.T) {
	for name, tc := range map[string]struct {
		err         error
		unavailable bool
		interrupted bool // for a write
	}{
		"postgres disk full":                  {&pgconn.PgError{Code: "53100"}, true, false},
		"postgres out of memory":              {&pgconn.PgError{Code: "53200"}, true, false},
		"postgres too many connections":       {&pgconn.PgError{Code: "53300"}, true, false},
		"sqlite disk full":                    {fmt.Errorf("exec: %w", errors.New("database or disk is full (13)")), true, false},
		"sqlite disk I/O":                     {errors.New("disk I/O error (10)"), true, true},
		"postgres read-only transaction":      {&pgconn.PgError{Code: "25006"}, true, false},
		"sqlite read-only file":               {errors.New("attempt to write a readonly database (8)"), true, false},
		"postgres statement_timeout":          {&pgconn.PgError{Code: "57014"}, true, false},
		"postgres lock_timeout":               {&pgconn.PgError{Code: "55P03"}, true, false},
		"postgres deadlock":                   {&pgconn.PgError{Code: "40P01"}, true, false},
		"postgres serialization failure":      {&pgconn.PgError{Code: "40001"}, true, false},
		"postgres one statement over a limit": {&pgconn.PgError{Code: "53400"}, false, false},
		"postgres unique violation":           {&pgconn.PgError{Code: "23505"}, false, false},
		"a connection lost mid-write":         {errors.New("conn closed"), true, true},
	} {
		err, werr := interpret(tc.err), interpretWrite(tc.err)
		if errors.Is(err, ErrUnavailable) != tc.unavailable || errors.Is(werr, ErrUnavailable) != tc.unavailable {
			t.Errorf("%s: interpret = %v, interpretWrite = %v; unavailable should be %v", name, err, werr, tc.unavailable)
		}
		if errors.Is(werr, ErrInterrupted) != tc.interrupted {
			t.Errorf("%s: interpretWrite = %v; interrupted should be %v", name, werr, tc.interrupted)
		}
	}
}
