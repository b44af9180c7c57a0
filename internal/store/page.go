package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

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

// settled runs find, a page's read of table, with the highest ID the
// page may hold, so that its cursor never passes a row still being
// written. A row's ID is taken when it is inserted, not when it commits,
// so concurrent writers commit out of ID order: a page read while ID 100's
// writer had not committed and 101's had would end with a cursor past 100,
// and no later page would list it.
//
// On Postgres the horizon is the highest ID given out when the list began;
// the writers of table in flight then (each holds ROW EXCLUSIVE on it until
// it ends) are waited for by watching pg_locks, and then every row at or
// below the horizon is committed or never will be, and every later one
// has a higher ID. No writer waits for a list: a lock would have been
// simpler, but it waits for writers in flight while every later writer
// queues behind it, which cost first calls a sixth of their throughput at
// 64 connections under a list every 10 ms. The wait is bounded by
// settleWait; a writer still in flight after that is a slow database, and
// the list is unavailable (503). SQLite writes one transaction at a time,
// in ID order. A list whose session Postgres ended runs once more, on
// another (again); find must start afresh each time it runs.
func (s *Store) settled(ctx context.Context, table string, find func(db *gorm.DB, horizon int64) error) error {
	return s.again(ctx, func() error { return s.settle(ctx, table, find) })
}

func (s *Store) settle(ctx context.Context, table string, find func(db *gorm.DB, horizon int64) error) error {
	db := s.db.WithContext(ctx)
	if s.dialect != Postgres {
		return find(db, math.MaxInt64)
	}
	// First the horizon, then the writers: one that took an ID at or below
	// it and has not ended is among those still holding the lock.
	var horizon sql.NullInt64
	if err := db.Raw("SELECT pg_sequence_last_value(pg_get_serial_sequence(?, 'id')::regclass)", table).Scan(&horizon).Error; err != nil {
		return err
	}
	if !horizon.Valid {
		return find(db, 0) // no ID given out yet
	}
	// The writers, as their virtual transaction IDs joined by commas.
	var writers string
	const holding = "SELECT coalesce(string_agg(virtualtransaction, ','), '') FROM pg_locks " +
		"WHERE relation = ?::regclass AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()"
	if err := db.Raw(holding, table).Scan(&writers).Error; err != nil {
		return err
	}
	for deadline := time.Now().Add(settleWait); writers != ""; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %w: a write to %s has been in flight for %v", ErrUnavailable, ErrWritesInFlight, table, settleWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if err := db.Raw(holding+" AND virtualtransaction = ANY(string_to_array(?, ','))", table, writers).Scan(&writers).Error; err != nil {
			return err
		}
	}
	return find(db, horizon.Int64)
}

// settleWait bounds how long settled waits for writers in flight.
const settleWait = 150 * time.Millisecond
