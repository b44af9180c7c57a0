package store_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
)

// A cursor continues the list it names and no other; one of the old
// unnamed form continues any; anything else was not made here.
func TestCursorNamesItsList(t *testing.T) {
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, list, cursor string
		want               int64
		err                error
	}{
		{"empty is the start", "agents", "", 0, nil},
		{"its own list", "agents", store.EncodeCursor("agents", 42), 42, nil},
		{"its own filter", "calls?tool=5", store.EncodeCursor("calls?tool=5", 7), 7, nil},
		{"a list name holding the separator", "catalog?category=a#b", store.EncodeCursor("catalog?category=a#b", 3), 3, nil},
		{"another list", "tools", store.EncodeCursor("agents", 42), 0, store.ErrCursorOtherList},
		{"another filter", "calls?tool=6", store.EncodeCursor("calls?tool=5", 7), 0, store.ErrCursorOtherList},
		{"without its filter", "calls", store.EncodeCursor("calls?tool=5", 7), 0, store.ErrCursorOtherList},
		{"with a filter it lacked", "calls?tool=5", store.EncodeCursor("calls", 7), 0, store.ErrCursorOtherList},
		{"the old form, any list", "calls?tool=5", raw("id:9"), 9, nil},
		{"the old form at the start", "catalog", raw("id:0"), 0, nil},
		{"not base64url", "agents", "a+b/", 0, store.ErrBadCursor},
		{"no position", "agents", raw("agents#"), 0, store.ErrBadCursor},
		{"a negative position", "agents", raw("agents#-1"), 0, store.ErrBadCursor},
		{"a second spelling", "agents", raw("agents#01"), 0, store.ErrBadCursor},
		{"a bad position of another list", "tools", raw("agents#x"), 0, store.ErrBadCursor},
		{"neither form", "agents", raw("42"), 0, store.ErrBadCursor},
		{"the old form without a number", "agents", raw("id:"), 0, store.ErrBadCursor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.DecodeCursor(tc.list, tc.cursor)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || got != tc.want {
				t.Errorf("DecodeCursor(%q, %q) = %d, %v; want %d, %v", tc.list, tc.cursor, got, err, tc.want, tc.err)
			}
			if errors.Is(err, store.ErrCursorOtherList) && !errors.Is(err, store.ErrBadCursor) {
				t.Error("ErrCursorOtherList is not an ErrBadCursor")
			}
		})
	}
}
