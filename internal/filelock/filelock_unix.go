//go:build unix

package filelock

import (
	"errors"
	"syscall"
)

// lock takes a flock(2) lock: it is held by the open file, so it ends with
// the process however the process ends, and is never left behind.
func lock(path string, wait bool) (func(), error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
