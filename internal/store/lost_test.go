package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestConnectionLost: a connection failing under a statement is lost; an
// answer of Postgres, a session never made, a timeout or the caller's
// giving up is not.
func TestConnectionLost(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("write failed: %w", reset), true},
		{fmt.Errorf("unexpected EOF: %w", io.ErrUnexpectedEOF), true},
		{io.EOF, true},
		{pgconn.ErrConnClosed, true},
		{nil, false},
		{&pgconn.PgError{Severity: "ERROR", Code: "42P01"}, false},
		{fmt.Errorf("read: %w", timeout), false},
		{context.Canceled, false},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), false},
	} {
		if got := connectionLost(c.err); got != c.want {
			t.Errorf("connectionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
