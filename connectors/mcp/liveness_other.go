//go:build !unix

package mcp

import "syscall"

// liveness looks at an idle connection without reading from it, where the
// platform lets it peek at a socket (liveness_unix.go). Elsewhere it cannot,
// and every idle connection counts as live: a request written into one the
// server closed meanwhile fails as on any connection lost in flight.
type liveness struct{}

// canPeek tells whether liveness can see a server's close here.
const canPeek = false

func newLiveness(syscall.Conn) *liveness { return nil }

func (l *liveness) alive() bool { return true }
