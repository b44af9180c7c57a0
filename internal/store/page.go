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

// trim cuts a page fetched with Limit+1 rows back to Limit and returns the
// cursor after it: set only when the extra row shows there is more.
func trim[T any](rows []T, limit int, id func(*T) int64) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(id(&rows[limit-1]))
}
