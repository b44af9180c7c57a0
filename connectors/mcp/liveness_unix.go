//go:build unix

package mcp

import (
	"errors"
	"syscall"
)

// canPeek tells whether liveness can see a server's close here.
const canPeek = true

// liveness looks at a connection's socket without waiting: whether an
// idle one is still open (alive), and what a busy one already holds
// (read). It is made once per connection, so a look allocates nothing.
type liveness struct {
	rc   syscall.RawConn
	peek func(fd uintptr) bool
	buf  [1]byte
	ok   bool

	recv func(fd uintptr) bool
	p    []byte
	n    int
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
	l.recv = func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), l.p)
			if err == syscall.EINTR {
				continue
			}
			l.n = max(n, 0) // 0: nothing there yet, the end, or a failure the blocking read reports
			return true     // never wait here
		}
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

// read reads what the socket holds into p without waiting, and returns how
// much it read: 0 when it would have to wait (or cannot read at all).
func (l *liveness) read(p []byte) int {
	if l == nil {
		return 0
	}
	l.p, l.n = p, 0
	l.rc.Read(l.recv)
	l.p = nil
	return l.n
}
