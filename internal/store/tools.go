package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Tool is a connected tool row. Config is plain JSON; Secrets and
// OAuthToken are sealed by the caller (package secrets) before they get here.
type Tool struct {
	ID          int64
	AccountID   int64
	CatalogName string
	Name        string
	State       string
	StepIndex   int
	Config      string
	Secrets     string
	OAuthToken  string `gorm:"column:oauth_token"`
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// CreateTool inserts t and sets its ID.
func (s *Store) CreateTool(ctx context.Context, t *Tool) error {
	now := time.Now().UTC()
	t.CreatedAt, t.UpdatedAt, t.Version = now, now, 1
	return interpretWrite(s.db.WithContext(ctx).Create(t).Error)
}

// GetTool returns the account's tool id, or ErrNotFound.
func (s *Store) GetTool(ctx context.Context, accountID, id int64) (*Tool, error) {
	var t Tool
	err := s.again(ctx, func() error {
		return s.db.WithContext(ctx).Where("id = ? AND account_id = ?", id, accountID).Take(&t).Error
	})
	if err != nil {
		return nil, interpret(err)
	}
	return &t, nil
}

// SealedSample returns one sealed value the tools hold (a tool's secrets or
// OAuth token), or "" when no tool holds any: what a secret key must be
// able to open before it may serve this database.
func (s *Store) SealedSample(ctx context.Context) (string, error) {
	var t Tool
	err := s.db.WithContext(ctx).Select("secrets", "oauth_token").
		Where("secrets <> '' OR oauth_token <> ''").Limit(1).Find(&t).Error
	if err != nil {
		return "", interpret(err)
	}
	if t.Secrets != "" {
		return t.Secrets, nil
	}
	return t.OAuthToken, nil
}

// ToolsByCatalogName returns the account's tools made from one catalog entry.
func (s *Store) ToolsByCatalogName(ctx context.Context, accountID int64, name string) ([]Tool, error) {
	var ts []Tool
	err := s.again(ctx, func() error {
		ts = nil
		return s.db.WithContext(ctx).Where("account_id = ? AND catalog_name = ?", accountID, name).Order("id").Limit(2).Find(&ts).Error
	})
	return ts, interpret(err)
}

// ListTools returns one page of the account's tools and the next cursor,
// read settled: a page never misses a tool created after an earlier page
// was read.
func (s *Store) ListTools(ctx context.Context, accountID int64, p Page) ([]Tool, string, error) {
	var ts []Tool
	err := s.settled(ctx, "tools", func(db *gorm.DB, horizon int64) error {
		ts = nil
		return db.Where("account_id = ? AND id > ? AND id <= ?", accountID, p.After, horizon).Order("id").Limit(p.Limit + 1).Find(&ts).Error
	})
	if err != nil {
		return nil, "", interpret(err)
	}
	ts, next := trim(ts, p.Limit, p.List, func(t *Tool) int64 { return t.ID })
	return ts, next, nil
}

// UpdateToolConfig writes the configuration fields of t if the row is still
// at the state and version the caller read (optimistic concurrency), and
// bumps the version. It returns ErrConflict when someone else changed it.
func (s *Store) UpdateToolConfig(ctx context.Context, t *Tool, wantState string, wantVersion int64) error {
	return updateTool(s.db.WithContext(ctx), t, wantState, wantVersion, "")
}

// updateTool is UpdateToolConfig on a given handle. With a lease (a
// refresh lease's owner, LockTool) the row must still hold it too, and the
// write frees it.
func updateTool(db *gorm.DB, t *Tool, wantState string, wantVersion int64, lease string) error {
	t.UpdatedAt = time.Now().UTC()
	fields := map[string]any{
		"state": t.State, "step_index": t.StepIndex, "config": t.Config, "secrets": t.Secrets,
		"oauth_token": t.OAuthToken, "version": gorm.Expr("version + 1"), "updated_at": t.UpdatedAt,
	}
	q := db.Model(&Tool{}).Where("id = ? AND account_id = ? AND state = ? AND version = ?", t.ID, t.AccountID, wantState, wantVersion)
	if lease != "" {
		q = q.Where("refresh_lease = ?", lease)
		fields["refresh_lease"], fields["refresh_lease_until"] = "", 0
	}
	res := q.Updates(fields)
	if res.Error != nil {
		return interpretWrite(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrConflict
	}
	t.Version = wantVersion + 1
	return nil
}

// DeleteTool deletes the account's tool and returns the row as it was
// deleted; the cascade detaches it from agents and drops its OAuth states,
// so its tokens are gone with the row.
//
// The agents it is attached to change (their rows in agent_tools go with
// the tool), so their updated_at is set, in two passes on Postgres around
// a lock of the tool's row (FOR UPDATE). The lock waits for an agent's
// update that attached the tool and has not committed (its foreign key
// holds a KEY SHARE lock on the row), whose agent the second pass then
// sees: without it, the cascade would detach the tool from an agent the
// update set no later updated_at for than its own. An update that attaches
// it after the lock waits for the delete, and its foreign key refuses it.
// The first pass takes the rows of the agents attached already before the
// tool's: an update of one of them holds its agent's row and, keeping the
// tool in its list, then waits for the tool's; taking the tool's first
// would deadlock with it. SQLite runs one writer at a time: one pass sees
// every attachment.
func (s *Store) DeleteTool(ctx context.Context, accountID, id int64) (*Tool, error) {
	var t Tool
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		touch := func() error {
			return tx.Model(&Agent{}).
				Where("account_id = ? AND id IN (SELECT agent_id FROM agent_tools WHERE tool_id = ?)", accountID, id).
				Update("updated_at", time.Now().UTC()).Error
		}
		if err := touch(); err != nil {
			return err
		}
		if s.dialect == Postgres {
			var ids []int64
			if err := tx.Raw(`SELECT id FROM tools WHERE id = ? AND account_id = ? FOR UPDATE`, id, accountID).Scan(&ids).Error; err != nil {
				return err
			}
			if len(ids) == 0 {
				return ErrNotFound
			}
			if err := touch(); err != nil {
				return err
			}
		}
		res := tx.Clauses(clause.Returning{}).Where("id = ? AND account_id = ?", id, accountID).Delete(&t)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, interpretWrite(err)
	}
	return &t, nil
}

// ExistingToolIDs returns which of ids are tools of the account.
func (s *Store) ExistingToolIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]bool, error) {
	var found []int64
	if len(ids) > 0 {
		err := s.db.WithContext(ctx).Model(&Tool{}).Where("account_id = ? AND id IN ?", accountID, ids).Pluck("id", &found).Error
		if err != nil {
			return nil, interpret(err)
		}
	}
	m := make(map[int64]bool, len(found))
	for _, id := range found {
		m[id] = true
	}
	return m, nil
}

// ToolsWithPlainURLs returns up to limit tools of any account, after afterID
// in ID order, whose plain configuration holds a URL: what
// toolconfig.Service.ResealStored looks through.
func (s *Store) ToolsWithPlainURLs(ctx context.Context, afterID int64, limit int) ([]Tool, error) {
	var ts []Tool
	err := s.db.WithContext(ctx).Where("id > ? AND config LIKE ?", afterID, "%://%").Order("id").Limit(limit).Find(&ts).Error
	return ts, interpret(err)
}

// ToolsWithSealed returns up to limit tools of any account, after afterID
// in ID order, that hold a sealed value: secrets, an OAuth token, or one in
// the plain configuration (a discovered provider's client secret and
// resource): what toolconfig.Service.RekeyStored looks through.
func (s *Store) ToolsWithSealed(ctx context.Context, afterID int64, limit int) ([]Tool, error) {
	var ts []Tool
	err := s.db.WithContext(ctx).Where("id > ? AND (secrets <> '' OR oauth_token <> '' OR config LIKE ?)", afterID, `%"v1:%`).
		Order("id").Limit(limit).Find(&ts).Error
	return ts, interpret(err)
}

// ResealTool writes t's config, secrets and OAuth token if the row is
// still at the version the caller read. The version, state and updated_at stay: what the
// row means is unchanged, and a writer that read it before (a token refresh
// waiting on its provider, an OAuth callback exchanging its code) must not
// fail for it; such a writer puts its own copy back, sealed again at the
// next start. It returns ErrConflict when someone else changed the row.
func (s *Store) ResealTool(ctx context.Context, t *Tool, wantVersion int64) error {
	res := s.db.WithContext(ctx).Model(&Tool{}).
		Where("id = ? AND account_id = ? AND version = ?", t.ID, t.AccountID, wantVersion).
		UpdateColumns(map[string]any{"config": t.Config, "secrets": t.Secrets, "oauth_token": t.OAuthToken}) // not Updates, which sets updated_at
	if res.Error != nil {
		return interpretWrite(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrConflict
	}
	return nil
}
