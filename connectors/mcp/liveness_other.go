//go:build !unix

package mcp

import "syscall"

// liveness looks at a connection's socket without waiting, where the
// platform lets it (liveness_unix.go). Elsewhere it cannot: every idle
// connection counts as live (a request written into one the server closed
// meanwhile fails as on any connection lost in flight), and a bounded read
// always sets its deadline.
type liveness struct{}

// canPeek tells whether liveness can see a server's close here.
const canPeek = false

func newLiveness(syscall.Conn) *liveness { return nil }

func (l *liveness) alive() bool { return true }

func (l *liveness) read([]byte) int { return 0 }
