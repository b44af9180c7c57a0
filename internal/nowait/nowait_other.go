//go:build !unix

package nowait

import "net"

// Socket is a connection's socket; here there is none to use (doc.go).
type Socket struct{}

// Available tells whether sockets can be looked at, read and written
// without waiting here.
const Available = false

// New returns nil: nothing is read or written without waiting here.
func New(net.Conn) *Socket { return nil }

// Read reads nothing.
func (s *Socket) Read([]byte) int { return 0 }

// Write writes nothing.
func (s *Socket) Write([]byte) int { return 0 }

// Quiet reports true: a connection that cannot be looked at counts as
// open and idle.
func (s *Socket) Quiet() bool { return true }
