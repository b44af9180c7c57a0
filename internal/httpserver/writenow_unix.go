//go:build unix

package httpserver

import (
	"net"
	"syscall"
)

// writeNow writes to a socket what it takes without waiting. It is made
// once per connection, so a write allocates nothing.
type writeNow struct {
	rc   syscall.RawConn
	do   func(fd uintptr) bool
	p    []byte
	done int
}

// newWriteNow returns nil for a connection that is not a socket.
func newWriteNow(conn net.Conn) *writeNow {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &writeNow{rc: rc}
	w.do = func(fd uintptr) bool {
		for w.done < len(w.p) {
			n, err := syscall.Write(int(fd), w.p[w.done:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break // full (EAGAIN), or failed: the blocking write says how
			}
			w.done += n
		}
		return true // never wait here
	}
	return w
}

// write returns how much of p the socket took at once.
func (w *writeNow) write(p []byte) int {
	if w == nil {
		return 0
	}
	w.p, w.done = p, 0
	w.rc.Write(w.do)
	w.p = nil
	return w.done
}
