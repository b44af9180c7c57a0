// Package nowait looks at, reads and writes a socket only as far as it can
// without waiting: whether an idle connection is still open and quiet,
// what it already holds, what its buffer takes. A caller that has
// to wait for the rest sets a deadline for that alone: a deadline is a
// runtime timer, and changing one (later too) makes the runtime wake a
// thread to watch it unless another change is already pending, which for
// a deadline set on every request was a wakeup per call.
//
// It works on Unix sockets; elsewhere, and for a connection that is not a
// socket (TLS, a pipe), New returns nil, which reads and writes nothing,
// so every byte goes through the caller's waiting path.
//
// It reads and writes the socket itself: a wrapper around a *net.TCPConn
// that changes what Read or Write do (counting, framing) must not expose
// the socket through SyscallConn, or this goes around it, as the standard
// library's ReadFrom and WriteTo do for such a wrapper.
package nowait
