package toolconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/store"
)

// Older builds stored a tool's URL in the plain configuration unless its
// query held a key; this one also seals a URL with a key in its path
// (connectors.HoldsSecret), and a discovered OAuth provider's resource
// holding one. ResealStored brings the rows an older build wrote up to
// that at start; Provide does the same for the tool it writes (reseal).

// ResealStore is what ResealStored needs of the store.
type ResealStore interface {
	ToolsWithPlainURLs(ctx context.Context, afterID int64, limit int) ([]store.Tool, error)
	GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	ResealTool(ctx context.Context, t *store.Tool, wantVersion int64) error
}

var _ ResealStore = (*store.Store)(nil)

// resealBatch is how many tools ResealStored reads at a time.
const resealBatch = 200

// ResealStored seals, in every account's tools, what an older build left in
// the plain configuration and this build seals, and returns how many tools
// it changed. Every replica runs it at start: each write is conditional on
// the version it read (a tool changed meanwhile is read again) and leaves
// the version as it was, so neither replicas nor requests racing it lose
// anything, and a tool already sealed is left alone.
func (s *Service) ResealStored(ctx context.Context, st ResealStore) (int, error) {
	n := 0
	for after := int64(0); ; {
		ts, err := st.ToolsWithPlainURLs(ctx, after, resealBatch)
		if err != nil || len(ts) == 0 {
			return n, err
		}
		for i := range ts {
			t := &ts[i]
			after = t.ID
			changed, err := s.resealOne(ctx, st, t)
			if err != nil {
				return n, fmt.Errorf("toolconfig: resealing tool %d: %w", t.ID, err)
			}
			if changed {
				n++
			}
		}
	}
}

// resealOne reseals t, reading it again if it changed before the write.
func (s *Service) resealOne(ctx context.Context, st ResealStore, t *store.Tool) (bool, error) {
	done, err := s.rewrite(ctx, st, t, s.resealed)
	return done == rewritten, err
}

// rewriteDone is what rewrite did.
type rewriteDone int

const (
	rewriteNone rewriteDone = iota // nothing to change, or the tool is gone
	rewritten
	rewriteLeft // changed under it three times: a later start does it
)

// toolRewriter is what rewrite needs of the store.
type toolRewriter interface {
	GetTool(ctx context.Context, accountID, id int64) (*store.Tool, error)
	ResealTool(ctx context.Context, t *store.Tool, wantVersion int64) error
}

// rewrite applies change to t and writes t back at the version it read
// (ResealTool: the version stays), reading it again and starting over if
// it changed before the write. change reports whether it changed t.
func (s *Service) rewrite(ctx context.Context, st toolRewriter, t *store.Tool, change func(*store.Tool) (bool, error)) (rewriteDone, error) {
	for range 3 {
		changed, err := change(t)
		if err != nil || !changed {
			return rewriteNone, err
		}
		err = st.ResealTool(ctx, t, t.Version)
		if err == nil {
			s.invalidate(t.AccountID, t.ID)
			return rewritten, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return rewriteNone, err
		}
		if t, err = st.GetTool(ctx, t.AccountID, t.ID); errors.Is(err, store.ErrNotFound) {
			return rewriteNone, nil // deleted meanwhile
		} else if err != nil {
			return rewriteNone, err
		}
	}
	return rewriteLeft, nil // its next write through Provide seals it as this build does
}

// resealed re-encodes t with what this build seals moved out of its plain
// configuration, and reports whether anything moved. A tool of a catalog
// entry this server does not have, or whose configuration it cannot read,
// is left as it is.
func (s *Service) resealed(t *store.Tool) (bool, error) {
	e, ok := s.opts.Catalog.Get(t.CatalogName)
	if !ok {
		return false, nil
	}
	plain, secret, err := s.decode(t)
	if err != nil {
		s.opts.Logger.Warn("toolconfig: a tool's configuration cannot be read; not resealed", "tool", t.ID, "error", err)
		return false, nil
	}
	before := len(plain)
	reseal(s.toolSteps(t, e), plain, secret)
	changed := len(plain) != before
	if d, ok := Discovered(t); ok && d.SealResource(s.opts.Box) {
		plain[DiscoveredKey] = d
		changed = true
	}
	if !changed {
		return false, nil
	}
	if err := s.encode(t, plain, secret); err != nil {
		return false, err
	}
	return true, nil
}

// reseal moves into secret each plain value that is now stored sealed
// (sealed): a URL an older build kept in the plain configuration, with a
// key in its path, is sealed once the tool's configuration is next written,
// not only if its own step is answered again.
func reseal(steps []catalog.Step, plain, secret map[string]any) {
	for i := range steps {
		for j := range steps[i].Fields {
			f := &steps[i].Fields[j]
			if v, ok := plain[f.Name]; ok && sealed(f, v) {
				if _, both := secret[f.Name]; !both { // the secret value wins, as in flatten
					secret[f.Name] = v
				}
				delete(plain, f.Name)
			}
		}
	}
}
