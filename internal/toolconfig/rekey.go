package toolconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quiverhq/quiver/internal/store"
)

// Rotating QUIVER_SECRET_KEY: serve is started with the new key and the
// old ones in QUIVER_SECRET_KEY_PREVIOUS, which open what they sealed; at
// start, RekeyStored seals each such value again with the new key, so that
// the old keys can go once every replica runs with the new one.

// Rotating reports whether the service's box holds keys its key replaces
// (QUIVER_SECRET_KEY_PREVIOUS), which RekeyStored retires.
func (s *Service) Rotating() bool { return s.opts.Box.Rotating() }

// RekeyStore is what RekeyStored needs of the store.
type RekeyStore interface {
	ToolsWithSealed(ctx context.Context, afterID int64, limit int) ([]store.Tool, error)
	GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	ResealTool(ctx context.Context, t *store.Tool, wantVersion int64) error
}

var _ RekeyStore = (*store.Store)(nil)

// RekeyStored seals again with the current key every value in every
// account's tools that a previous key sealed (secrets, OAuth tokens, and
// the sealed values of a discovered provider in the configuration), and
// returns how many tools it changed and how many it left with such a value
// (changed under it three times, or written meanwhile by a replica still on
// an old key: the next start seals them). Like ResealStored, every replica
// runs it at start, each write conditional on the version it read and
// leaving the version as it was.
func (s *Service) RekeyStored(ctx context.Context, st RekeyStore) (changed, left int, err error) {
	if !s.opts.Box.Rotating() {
		return 0, 0, nil // nothing can be stale
	}
	for after := int64(0); ; {
		ts, err := st.ToolsWithSealed(ctx, after, resealBatch)
		if err != nil || len(ts) == 0 {
			return changed, left, err
		}
		for i := range ts {
			t := &ts[i]
			after = t.ID
			done, err := s.rewrite(ctx, st, t, func(t *store.Tool) (bool, error) { return s.rekeyed(t), nil })
			switch {
			case err != nil:
				return changed, left, fmt.Errorf("toolconfig: sealing tool %d again: %w", t.ID, err)
			case done == rewritten:
				changed++
			case done == rewriteLeft:
				left++
			}
		}
	}
}

// rekeyed seals again with the current key each value of t a previous key
// sealed, and reports whether there was one. A value no key opens is left
// as it is: reading it fails as it did.
func (s *Service) rekeyed(t *store.Tool) bool {
	changed := false
	for _, v := range []*string{&t.Secrets, &t.OAuthToken} {
		var again bool
		if *v, again = s.opts.Box.Reseal(*v); again {
			changed = true
		}
	}
	// The configuration's sealed values are strings anywhere in it (a
	// discovered provider's client secret and resource); it is written
	// again only if one of them changes.
	dec := json.NewDecoder(strings.NewReader(t.Config))
	dec.UseNumber()
	var config any
	if t.Config == "" || dec.Decode(&config) != nil {
		return changed
	}
	if !s.rekeyValue(&config) {
		return changed
	}
	b, err := json.Marshal(config)
	if err != nil {
		return changed
	}
	t.Config = string(b)
	return true
}

// rekeyValue seals again each string in *v a previous key sealed.
func (s *Service) rekeyValue(v *any) bool {
	changed := false
	switch x := (*v).(type) {
	case string:
		*v, changed = s.opts.Box.Reseal(x)
	case map[string]any:
		for k, e := range x {
			if s.rekeyValue(&e) {
				x[k], changed = e, true
			}
		}
	case []any:
		for i := range x {
			if s.rekeyValue(&x[i]) {
				changed = true
			}
		}
	}
	return changed
}
