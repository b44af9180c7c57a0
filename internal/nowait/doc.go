// Package nowait reads and writes a socket only as far as it can without
// waiting: what it already holds, what its buffer takes. A caller that has
// to wait for the rest sets a deadline for that alone: a deadline is a
// runtime timer, and setting or moving one wakes a thread to watch it,
// which for a deadline set on every request was a wakeup per call.
//
// It works on Unix sockets; elsewhere, and for a connection that is not a
// socket (TLS, a pipe), New returns nil, which reads and writes nothing,
// so every byte goes through the caller's waiting path.
package nowait
