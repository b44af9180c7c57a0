package problem

import "strconv"

// MaxQuoted is how many characters of a caller's input a message quotes.
const MaxQuoted = 64

// Quote is s as a message quotes a caller's input: in Go's quotes, cut to
// MaxQuoted characters with "…" where it was cut, so a megabyte sent is not
// a megabyte answered.
func Quote(s string) string {
	n := 0
	for i := range s {
		if n == MaxQuoted {
			return strconv.Quote(s[:i] + "…")
		}
		n++
	}
	return strconv.Quote(s)
}
