// Package replaycache is the fast path of idempotent calls: a reservation
// lock and a cache of stored outcomes, in Redis (shared by every replica) or
// in process (the embedded default). It is never the arbiter: Postgres's
// unique key decides who runs a call, and any error or lost data here only
// sends the caller to Postgres. It knows nothing of HTTP or SQL.
package replaycache

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// State of a cached outcome.
const (
	StateSucceeded      byte = 's'
	StateOutcomeUnknown byte = 'u'
)

// Entry is a terminal outcome kept for replay.
type Entry struct {
	Fingerprint []byte // 32 bytes
	State       byte
	Status      int
	ContentType string
	Body        []byte
	CallID      string
	// ReadOnly is whether the call's action was annotated read-only when
	// its key was reserved; nil when not known (an entry an older build
	// wrote, or the outcome of a row reserved before the database recorded
	// it).
	ReadOnly *bool
	// ExpiresAt (unix milliseconds) is when the key expires; a cached copy
	// must not outlive it. Zero means unknown.
	ExpiresAt int64
}

// BeginResult is what Begin found.
type BeginResult struct {
	// Entry is set when the key has a cached outcome.
	Entry *Entry
	// Locked is true when this caller took the reservation lock; false
	// with no Entry when another request holds it.
	Locked bool
	// TTL is how long the cache keeps Entry, by its own clock; zero when
	// it does not say. Unlike Entry.ExpiresAt, set on the clock of the
	// replica that wrote the entry, it holds whatever the clocks of the
	// replicas say.
	TTL time.Duration
}

// Cache is implemented by Redis and Memory.
type Cache interface {
	// Begin returns the cached outcome of (account, key) or, failing that,
	// tries to take the key's lock for lease; one round trip.
	Begin(ctx context.Context, account int64, key string, fingerprint []byte, token string, lease time.Duration) (BeginResult, error)
	// Finish caches an outcome for ttl and drops the lock; one round trip.
	Finish(ctx context.Context, account int64, key string, e *Entry, ttl time.Duration) error
	// Unlock drops the lock if token still holds it.
	Unlock(ctx context.Context, account int64, key, token string) error
	// Ping checks the cache is reachable.
	Ping(ctx context.Context) error
}

// MaxBody is the largest body cached; larger outcomes replay from the
// database.
const MaxBody = 1 << 20

var errCorrupt = errors.New("replaycache: corrupt entry")

var flagTrue, flagFalse = true, false

// Flag returns a pointer to b for an Entry's ReadOnly, shared by every
// entry (none is written through), so that recording it allocates nothing.
func Flag(b bool) *bool {
	if b {
		return &flagTrue
	}
	return &flagFalse
}

// Values of the read-only byte of an encoded entry.
const (
	readOnlyUnknown byte = 0
	readOnlyNo      byte = 'w'
	readOnlyYes     byte = 'r'
)

// encode lays an entry out as: fingerprint(32) state(1) readOnly(1)
// status(2) expiresAt(8) len(ct)(2) ct len(callID)(1) callID body.
func encode(e *Entry) []byte {
	b := make([]byte, 0, 47+len(e.ContentType)+len(e.CallID)+len(e.Body))
	b = append(b, e.Fingerprint...)
	b = append(b, e.State)
	switch {
	case e.ReadOnly == nil:
		b = append(b, readOnlyUnknown)
	case *e.ReadOnly:
		b = append(b, readOnlyYes)
	default:
		b = append(b, readOnlyNo)
	}
	return appendRest(b, e)
}

func appendRest(b []byte, e *Entry) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(e.Status))
	b = binary.BigEndian.AppendUint64(b, uint64(e.ExpiresAt))
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.ContentType)))
	b = append(b, e.ContentType...)
	b = append(b, byte(len(e.CallID)))
	b = append(b, e.CallID...)
	return append(b, e.Body...)
}

// decode reads what encode wrote.
func decode(b []byte) (*Entry, error) {
	if len(b) < 34 {
		return nil, errCorrupt
	}
	e := &Entry{Fingerprint: b[:32], State: b[32]}
	switch b[33] {
	case readOnlyYes:
		e.ReadOnly = Flag(true)
	case readOnlyNo:
		e.ReadOnly = Flag(false)
	default:
		// Not known: readOnlyUnknown, or a value a later build wrote. The
		// engine then asks the key's row, rather than losing the cache.
	}
	return decodeRest(e, b[34:])
}

// decodeLegacy reads an entry in the layout of the builds before the
// read-only byte (encode's without it): whether its action was read-only
// is not known.
func decodeLegacy(b []byte) (*Entry, error) {
	if len(b) < 33 {
		return nil, errCorrupt
	}
	return decodeRest(&Entry{Fingerprint: b[:32], State: b[32]}, b[33:])
}

func decodeRest(e *Entry, b []byte) (*Entry, error) {
	if len(b) < 12 {
		return nil, errCorrupt
	}
	e.Status = int(binary.BigEndian.Uint16(b[0:2]))
	e.ExpiresAt = int64(binary.BigEndian.Uint64(b[2:10]))
	n := int(binary.BigEndian.Uint16(b[10:12]))
	b = b[12:]
	if len(b) < n+1 {
		return nil, errCorrupt
	}
	e.ContentType = string(b[:n])
	b = b[n:]
	m := int(b[0])
	b = b[1:]
	if len(b) < m {
		return nil, errCorrupt
	}
	e.CallID = string(b[:m])
	e.Body = b[m:]
	return e, nil
}

// lockValue is what a lock holds: the holder's fingerprint and token.
func lockValue(fingerprint []byte, token string) string {
	return string(fingerprint) + token
}
