package store

import (
	"encoding/base64"
	"errors"
	"strconv"
)

// Page asks for one page of a list, newest last: rows with an ID above
// After, at most Limit of them.
type Page struct {
	After int64
	Limit int
}

// ErrBadCursor is returned for a cursor this server did not make.
var ErrBadCursor = errors.New("store: invalid cursor")

// EncodeCursor makes the opaque cursor that continues after id.
func EncodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

// DecodeCursor reads a cursor made by EncodeCursor; empty means the start.
func DecodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 4 || string(b[:3]) != "id:" {
		return 0, ErrBadCursor
	}
	id, err := strconv.ParseInt(string(b[3:]), 10, 64)
	if err != nil || id < 0 {
		return 0, ErrBadCursor
	}
	return id, nil
}

// nextCursor returns the cursor after a page of n rows whose last ID is
// lastID, or "" when the page was not full. A full page whose successor is
// empty costs one more request; that is cheaper than counting.
func nextCursor(n, limit int, lastID int64) string {
	if n < limit || n == 0 {
		return ""
	}
	return EncodeCursor(lastID)
}
