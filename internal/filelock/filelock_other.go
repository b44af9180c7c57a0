//go:build !unix

package filelock

// lock is a no-op where flock(2) does not exist: one process per data
// folder is then the operator's to ensure.
func lock(path string, wait bool) (func(), error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}
