//go:build !unix

package nowait

import "net"

// Socket is a connection's socket; here there is none to use (doc.go).
type Socket struct{}

// New returns nil: nothing is read or written without waiting here.
func New(net.Conn) *Socket { return nil }

// Read reads nothing.
func (s *Socket) Read([]byte) int { return 0 }

// Write writes nothing.
func (s *Socket) Write([]byte) int { return 0 }
