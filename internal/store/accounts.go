package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Account owns API keys, tools and agents.
type Account struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// APIKey is a stored API key: only its SHA-256 hash and a short prefix for
// people to recognise it by.
type APIKey struct {
	ID        int64
	AccountID int64
	KeyHash   string
	Prefix    string
	Scope     string // "full" or "read"
	CreatedAt time.Time
	RevokedAt *time.Time
}

// EnsureAccount returns the account named name, creating it if needed.
func (s *Store) EnsureAccount(ctx context.Context, name string) (*Account, error) {
	db := s.db.WithContext(ctx)
	a := &Account{Name: name, CreatedAt: time.Now().UTC()}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(a).Error; err != nil {
		return nil, interpret(err)
	}
	var got Account
	if err := db.Where("name = ?", name).Take(&got).Error; err != nil {
		return nil, interpret(err)
	}
	return &got, nil
}

// CountAPIKeys counts the API keys ever made, revoked ones included.
func (s *Store) CountAPIKeys(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&APIKey{}).Count(&n).Error
	return n, interpret(err)
}

// CreateAPIKey stores a key hash for an account.
func (s *Store) CreateAPIKey(ctx context.Context, k *APIKey) error {
	if k.CreatedAt.IsZero() {
		k.CreatedAt = time.Now().UTC()
	}
	if k.Scope == "" {
		k.Scope = "full"
	}
	return interpretWrite(s.db.WithContext(ctx).Create(k).Error)
}

// KeyByHash resolves an unrevoked key hash to its account ID and scope.
func (s *Store) KeyByHash(ctx context.Context, hash string) (accountID int64, scope string, err error) {
	var k APIKey
	err = s.again(ctx, func() error {
		return s.db.WithContext(ctx).Select("account_id", "scope").
			Where("key_hash = ? AND revoked_at IS NULL", hash).Take(&k).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, "", ErrNotFound
	}
	return k.AccountID, k.Scope, interpret(err)
}

// RevokeAPIKey revokes a key by its hash.
func (s *Store) RevokeAPIKey(ctx context.Context, hash string) error {
	res := s.db.WithContext(ctx).Model(&APIKey{}).Where("key_hash = ? AND revoked_at IS NULL", hash).
		Update("revoked_at", time.Now().UTC())
	if res.Error != nil {
		return interpretWrite(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
