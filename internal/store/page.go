package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
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

// settled runs find, a page's read of table, so that the page's cursor
// never passes a row still being written. A row's ID is taken when it is
// inserted, not when it commits, so concurrent writers commit out of ID
// order: a page read while ID 100's writer had not committed and 101's had
// would end with a cursor past 100, and no later page would list it. On
// Postgres find runs under SHARE lock on table, which waits for every
// transaction still writing it (each holds ROW EXCLUSIVE from its
// statement's start, before it takes an ID) and holds off new ones while
// the page is read: every ID taken so far is committed or never will be,
// and every later one is larger. A writer that starts while a page is read
// waits for that read (of any account: the lock is the table's), and so
// does one queued behind the lock's wait, so the lock is waited for at
// most settleWait, three times; then the list is unavailable (503) and the
// writers behind it go on: a writer still writing after that long is a
// slow database, and calls are not held up behind a list for longer. A
// standby refuses the lock (read_only_sql_transaction) and needs none, as
// nothing writes to it: the page is read without. SQLite writes one
// transaction at a time, in ID order. find may run more than once.
func (s *Store) settled(ctx context.Context, table string, find func(db *gorm.DB) error) error {
	db := s.db.WithContext(ctx)
	if s.dialect != Postgres {
		return find(db)
	}
	var err error
	for range 3 {
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL lock_timeout = " + settleWait).Error; err != nil {
				return err
			}
			if err := tx.Exec("LOCK TABLE " + table + " IN SHARE MODE").Error; err != nil {
				return err
			}
			return find(tx)
		})
		if !lockNotAvailable(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil && readOnly(err) {
		return find(db)
	}
	return err
}

// settleWait bounds one wait for settled's lock, as a lock_timeout.
const settleWait = "'50ms'"

// lockNotAvailable reports whether err is Postgres giving up on a lock at
// lock_timeout.
func lockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}
