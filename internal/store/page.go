package store

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Page asks for one page of a list, newest last: rows with an ID above
// After, at most Limit of them.
type Page struct {
	After int64
	Limit int
	// List names the list being paged, its filters included ("calls",
	// "calls?tool=5"). The cursor after this page carries it, so that the
	// cursor continues this list and no other: given to another, its
	// position would silently page rows it was never about.
	List string
}

// ErrBadCursor is returned for a cursor this server did not make.
var ErrBadCursor = errors.New("store: invalid cursor")

// ErrCursorOtherList is returned for a cursor this server made for another
// list, or for the same list under other filters. It is an ErrBadCursor.
var ErrCursorOtherList = fmt.Errorf("%w: made for another list", ErrBadCursor)

// A cursor is base64url (unpadded) of list + "#" + position. The position
// is last, in digits, so the last '#' splits it off whatever the list's
// name holds (a catalog category is free text).
const cursorSep = "#"

// legacyPrefix begins the cursors made before they named their list:
// "id:" + position, for every list alike.
const legacyPrefix = "id:"

// EncodeCursor makes the opaque cursor that continues list after position.
func EncodeCursor(list string, after int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(list + cursorSep + strconv.FormatInt(after, 10)))
}

// DecodeCursor reads a cursor made by EncodeCursor for list and returns its
// position; empty means the start. A cursor made for another list is
// ErrCursorOtherList; anything else this server did not make, ErrBadCursor.
func DecodeCursor(list, c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, ErrBadCursor
	}
	s := string(b)
	i := strings.LastIndex(s, cursorSep)
	if i < 0 {
		// The old form, accepted for any list: servers before this one made
		// it for every list, and in a rolling upgrade a client walking a
		// list holds one from an old replica while its next page is served
		// by a new one. Refusing it would break every walk in flight; it
		// names no list, so it pages as unchecked as it always did. Once no
		// replica makes it, a later release can refuse it.
		if !strings.HasPrefix(s, legacyPrefix) {
			return 0, ErrBadCursor
		}
		return position(s[len(legacyPrefix):])
	}
	after, err := position(s[i+len(cursorSep):])
	if err != nil {
		return 0, err
	}
	if s[:i] != list {
		return 0, ErrCursorOtherList
	}
	return after, nil
}

// position reads a cursor's position: digits only, one spelling per number,
// so that a cursor has one form.
func position(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, ErrBadCursor
	}
	return n, nil
}

// trim cuts a page fetched with Limit+1 rows back to Limit and returns the
// cursor after it: set only when the extra row shows there is more.
func trim[T any](rows []T, limit int, list string, id func(*T) int64) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(list, id(&rows[limit-1]))
}
