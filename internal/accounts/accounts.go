// Package accounts owns accounts and their API keys: making keys, storing
// only their SHA-256 hashes, and resolving a presented key to its account
// quickly (cached in process for a short TTL, so a revoked key stops working
// on every replica within that TTL; a key found unknown is remembered as
// unknown for as long, so a client retrying a revoked or mistyped key in a
// loop costs the database one query per TTL, not one per request). It never
// stores or logs a key itself.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/quiverhq/quiver/internal/store"
)

// KeyPrefix starts every Quiver API key, so a leaked one is recognisable.
const KeyPrefix = "qv_"

const keyAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// keyRandomChars of base62 carry about 238 bits of randomness.
const keyRandomChars = 40

// ErrUnknownKey is returned for a key that is malformed, unknown or revoked.
var ErrUnknownKey = errors.New("accounts: unknown API key")

// Store is the persistence accounts needs.
type Store interface {
	EnsureAccount(ctx context.Context, name string) (*store.Account, error)
	CountAPIKeys(ctx context.Context) (int64, error)
	CreateAPIKey(ctx context.Context, k *store.APIKey) error
	KeyByHash(ctx context.Context, hash string) (accountID int64, scope string, err error)
	RevokeAPIKey(ctx context.Context, hash string) error
}

var _ Store = (*store.Store)(nil)

// Service creates and resolves API keys.
type Service struct {
	store Store
	ttl   time.Duration
	log   *slog.Logger
	now   func() time.Time // time.Now; a test's clock
	mu    sync.Mutex
	cache map[string]cachedKey // by key hash
	// refused holds the hashes of well-formed keys the store did not
	// resolve (unknown, revoked, or of a scope this server does not know),
	// each until when it is refused without asking the store again. It is
	// kept apart from cache so that a flood of guessed keys, which empties
	// it at maxRefused, never evicts the keys in use.
	refused map[string]time.Time
}

// maxCached and maxRefused bound the two caches' memory; a full one is
// emptied and starts again.
const (
	maxCached  = 100_000
	maxRefused = 10_000
)

type cachedKey struct {
	principal Principal
	expires   time.Time
}

// Principal is who a key speaks for.
type Principal struct {
	Account int64
	// ReadOnly keys may read everything of their account and call only
	// actions annotated read-only; anything else is 403 forbidden.
	ReadOnly bool
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p, for code past the API layer (the
// agent MCP endpoint's tool handlers) that must know what the key may do.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx; the zero Principal (full
// rights, no account) when there is none.
func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// Scopes of a key as stored.
const (
	ScopeFull = "full"
	ScopeRead = "read"
)

// New returns a Service whose resolutions, and refusals of keys the store
// does not know, are cached for ttl (0: never). log takes the refusals
// worth an operator's attention (nil: none).
func New(s Store, ttl time.Duration, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: s, ttl: ttl, log: log, now: time.Now, cache: map[string]cachedKey{}, refused: map[string]time.Time{}}
}

// Hash returns the stored form of a key.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// WellFormed reports whether key has the shape of a Quiver key.
func WellFormed(key string) bool {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok || len(rest) != keyRandomChars {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(keyAlphabet, rest[i]) < 0 {
			return false
		}
	}
	return true
}

func newKey() (string, error) {
	var b strings.Builder
	b.WriteString(KeyPrefix)
	max := big.NewInt(int64(len(keyAlphabet)))
	for i := 0; i < keyRandomChars; i++ {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(keyAlphabet[n.Int64()])
	}
	return b.String(), nil
}

// CreateKey makes the account named accountName if needed and returns a new
// key for it. The key is returned once and never stored.
func (s *Service) CreateKey(ctx context.Context, accountName string) (key string, account *store.Account, err error) {
	return s.createKey(ctx, accountName, ScopeFull)
}

// CreateReadOnlyKey is CreateKey for a read-only key.
func (s *Service) CreateReadOnlyKey(ctx context.Context, accountName string) (key string, account *store.Account, err error) {
	return s.createKey(ctx, accountName, ScopeRead)
}

func (s *Service) createKey(ctx context.Context, accountName, scope string) (key string, account *store.Account, err error) {
	account, err = s.store.EnsureAccount(ctx, accountName)
	if err != nil {
		return "", nil, err
	}
	key, err = newKey()
	if err != nil {
		return "", nil, err
	}
	err = s.store.CreateAPIKey(ctx, &store.APIKey{AccountID: account.ID, KeyHash: Hash(key), Prefix: key[:len(KeyPrefix)+4], Scope: scope})
	return key, account, err
}

// HasKeys reports whether any API key was ever made (revoked ones count).
func (s *Service) HasKeys(ctx context.Context) (bool, error) {
	n, err := s.store.CountAPIKeys(ctx)
	return n > 0, err
}

// Resolve returns the account of key, or ErrUnknownKey.
func (s *Service) Resolve(ctx context.Context, key string) (int64, error) {
	p, err := s.Principal(ctx, key)
	return p.Account, err
}

// Principal returns who key speaks for, or ErrUnknownKey.
func (s *Service) Principal(ctx context.Context, key string) (Principal, error) {
	if !WellFormed(key) {
		return Principal{}, ErrUnknownKey
	}
	h := Hash(key)
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[h]
	var until time.Time
	if !ok || !now.Before(c.expires) {
		until = s.refused[h] // a key in use is not looked for here
	}
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.principal, nil
	}
	if now.Before(until) {
		return Principal{}, ErrUnknownKey
	}
	id, scope, err := s.store.KeyByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		s.refuse(h, now)
		return Principal{}, ErrUnknownKey
	}
	if err != nil {
		return Principal{}, err
	}
	var p Principal
	switch scope {
	case ScopeFull:
		p = Principal{Account: id}
	case ScopeRead:
		p = Principal{Account: id, ReadOnly: true}
	default:
		// A scope this server does not know (a newer release's, seen in
		// a rolling upgrade or a rollback) allows what this server cannot
		// tell: the key is refused rather than served with full rights.
		// The caller sees only 401, so the reason is logged here (the
		// account and scope; never the key or its hash).
		s.log.WarnContext(ctx, "api key refused: its scope is not one this server knows", "account_id", id, "scope", scope)
		s.refuse(h, now)
		return Principal{}, ErrUnknownKey
	}
	if s.ttl > 0 {
		s.mu.Lock()
		if len(s.cache) >= maxCached {
			s.cache = map[string]cachedKey{}
		}
		s.cache[h] = cachedKey{principal: p, expires: now.Add(s.ttl)}
		delete(s.refused, h)
		s.mu.Unlock()
	}
	return p, nil
}

// refuse remembers that the store did not resolve the key hashed h.
func (s *Service) refuse(h string, now time.Time) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	if len(s.refused) >= maxRefused {
		s.refused = map[string]time.Time{}
	}
	s.refused[h] = now.Add(s.ttl)
	s.mu.Unlock()
}

// Revoke revokes a key; this replica forgets it at once.
func (s *Service) Revoke(ctx context.Context, key string) error {
	h := Hash(key)
	s.mu.Lock()
	delete(s.cache, h)
	s.mu.Unlock()
	return s.store.RevokeAPIKey(ctx, h)
}
