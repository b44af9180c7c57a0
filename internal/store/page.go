package store

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Page asks for one page of a list, newest last: rows after the cursor
// (ID above After; for the call log, listed by time, the rows after
// (AfterAt, After)), at most Limit of them.
type Page struct {
	After   int64
	AfterAt time.Time // set by a call log cursor
	Limit   int
}

// ErrBadCursor is returned for a cursor this server did not make.
var ErrBadCursor = errors.New("store: invalid cursor")

// EncodeCursor makes the opaque cursor that continues after id.
func EncodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

// encodeTimeCursor makes the opaque cursor that continues after the row
// at (at, id) of a list ordered by time, then ID.
func encodeTimeCursor(at time.Time, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("at:" + strconv.FormatInt(at.UnixNano(), 10) + ":" + strconv.FormatInt(id, 10)))
}

// DecodeCursor reads a cursor this package made into p's After and
// AfterAt; empty means the start.
func DecodeCursor(c string, p *Page) error {
	if c == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return ErrBadCursor
	}
	kind, rest, _ := strings.Cut(string(b), ":")
	var at int64 = -1
	switch kind {
	case "id":
	case "at":
		var ns string
		ns, rest, _ = strings.Cut(rest, ":")
		if at, err = strconv.ParseInt(ns, 10, 64); err != nil || at < 0 {
			return ErrBadCursor
		}
	default:
		return ErrBadCursor
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id < 0 {
		return ErrBadCursor
	}
	p.After = id
	if at >= 0 {
		p.AfterAt = time.Unix(0, at).UTC()
	}
	return nil
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
