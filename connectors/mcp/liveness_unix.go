//go:build unix

package mcp

import (
	"errors"
	"syscall"
)

// canPeek tells whether liveness can see a server's close here.
const canPeek = true

// liveness looks at an idle connection without reading from it. It is
// made once per connection, so a check allocates nothing.
type liveness struct {
	rc   syscall.RawConn
	peek func(fd uintptr) bool
	buf  [1]byte
	ok   bool
}

func newLiveness(raw syscall.Conn) *liveness {
	if raw == nil {
		return nil
	}
	rc, err := raw.SyscallConn()
	if err != nil {
		return nil
	}
	l := &liveness{rc: rc}
	l.peek = func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), l.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		l.ok = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true
	}
	return l
}

// alive reports whether an idle connection is still open and quiet: the
// server neither closed it nor sent anything (an idle HTTP/1.1 connection
// gets nothing but a close). A connection it cannot look at counts as live.
func (l *liveness) alive() bool {
	if l == nil {
		return true
	}
	l.ok = false
	return l.rc.Read(l.peek) == nil && l.ok
}
