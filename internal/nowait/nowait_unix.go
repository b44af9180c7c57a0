//go:build unix

package nowait

import (
	"errors"
	"net"
	"syscall"
)

// Socket is a connection's socket. It is made once per connection, so a
// look, a read or a write allocates nothing. Like the connection's own
// reads and writes, one read (or look) and one write may run at a time.
type Socket struct {
	rc syscall.RawConn

	read, write, peek func(fd uintptr) bool
	rp, wp            []byte
	rn, wn            int
	quiet             bool
	one               [1]byte
}

// New returns conn's socket, or nil when conn is not a socket (it does
// not expose one through syscall.Conn; see the package doc on wrappers).
func New(conn net.Conn) *Socket {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &Socket{rc: rc}
	// Each returns true: never wait. A failure (EAGAIN included) ends the
	// attempt; the caller's waiting read or write reports any that lasts.
	s.read = func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), s.rp)
			if err != syscall.EINTR {
				s.rn = max(n, 0) // 0: nothing there yet, the end, or a failure
				return true
			}
		}
	}
	s.write = func(fd uintptr) bool {
		for s.wn < len(s.wp) {
			n, err := syscall.Write(int(fd), s.wp[s.wn:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			s.wn += n
		}
		return true
	}
	s.peek = func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), s.one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		s.quiet = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true
	}
	return s
}

// Available tells whether sockets can be looked at, read and written
// without waiting here.
const Available = true

// Quiet reports whether the socket is still open and has nothing to read,
// without reading: an idle HTTP/1.1 connection the server has not closed
// (it gets nothing but a close). A nil Socket, which cannot look, reports
// true.
func (s *Socket) Quiet() bool {
	if s == nil {
		return true
	}
	s.quiet = false
	return s.rc.Read(s.peek) == nil && s.quiet
}

// Read reads into p what the socket holds, and returns how much: 0 when
// it would have to wait, or at the end of the stream, or on a failure.
func (s *Socket) Read(p []byte) int {
	if s == nil {
		return 0
	}
	s.rp, s.rn = p, 0
	s.rc.Read(s.read)
	s.rp = nil
	return s.rn
}

// Write writes as much of p as the socket takes at once, and returns how
// much.
func (s *Socket) Write(p []byte) int {
	if s == nil {
		return 0
	}
	s.wp, s.wn = p, 0
	s.rc.Write(s.write)
	s.wp = nil
	return s.wn
}
