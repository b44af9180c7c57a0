// Package filelock takes advisory locks on files, between processes: the
// embedded database's migrations, and the one serve process a data folder
// may have.
package filelock

import (
	"errors"
	"os"
)

// ErrLocked is returned by TryLock when another process holds the lock.
var ErrLocked = errors.New("filelock: held by another process")

// Lock blocks until it holds the lock on path (created if missing) and
// returns the function that releases it.
func Lock(path string) (unlock func(), err error) { return lock(path, true) }

// TryLock takes the lock on path if it is free, else returns ErrLocked.
func TryLock(path string) (unlock func(), err error) { return lock(path, false) }

func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
