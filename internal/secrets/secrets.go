// Package secrets encrypts configuration secrets and OAuth tokens at rest
// with AES-256-GCM. It owns the key format and the sealed-value format; it
// never logs or returns plaintext anywhere but to its caller.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a key in bytes.
const KeySize = 32

const sealedPrefix = "v1:"

// ErrCorrupt is returned when a sealed value cannot be opened.
var ErrCorrupt = errors.New("secrets: sealed value is corrupt or was sealed with another key")

// Box seals values with one key and opens what it or earlier keys sealed.
type Box struct {
	aead     cipher.AEAD
	previous []cipher.AEAD // earlier keys, newest first: they open, never seal
}

// New returns a Box for a 32-byte key and, while a key is being rotated,
// the keys it replaces (previous), which open what they sealed until it is
// sealed again with key (Stale).
func New(key []byte, previous ...[]byte) (*Box, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	b := &Box{aead: aead}
	for i, p := range previous {
		if bytes.Equal(p, key) {
			return nil, fmt.Errorf("secrets: previous key %d is the current key", i+1)
		}
		a, err := newAEAD(p)
		if err != nil {
			return nil, fmt.Errorf("secrets: previous key %d: %w", i+1, err)
		}
		b.previous = append(b.previous, a)
	}
	return b, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// ParseKey decodes a base64 key (standard or URL alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("must decode to %d bytes, got %d", KeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("must be base64")
}

// LoadOrCreateKeyFile reads the base64 key in path, creating it with a new
// random key (mode 0600) if it does not exist; created reports whether this
// call made the file.
//
// The key is written and synced to a file of its own first and then linked
// to path, which fails if path exists: two processes started at once on a
// new data directory make one key between them, and neither can read the
// other's file before its key is in it.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	key, err = readKeyFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	tmp, err := writeKeyFile(dir, key)
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp)
	switch err := os.Link(tmp, path); {
	case errors.Is(err, os.ErrExist): // another process linked its key first
		key, err = readKeyFile(path)
		return key, false, err
	case err != nil:
		return nil, false, err
	}
	return key, true, nil
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKey(string(b))
}

// writeKeyFile writes key to a new file in dir (mode 0600, CreateTemp's),
// synced, and returns its name.
func writeKeyFile(dir string, key []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".secret.key-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// Seal encrypts plaintext into a printable string.
func (b *Box) Seal(plaintext []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("secrets: no randomness: " + err.Error())
	}
	out := b.aead.Seal(nonce, nonce, plaintext, nil)
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(out)
}

// Open decrypts a value made by Seal, with this Box's key or one it
// replaces.
func (b *Box) Open(sealed string) ([]byte, error) {
	pt, _, err := b.open(sealed)
	return pt, err
}

// Rotating reports whether this Box holds keys its key replaces.
func (b *Box) Rotating() bool { return len(b.previous) > 0 }

// Stale reports whether sealed was made with a key this Box replaces: it
// opens, and should be sealed again with the current key, after which the
// previous key is no longer needed for it.
func (b *Box) Stale(sealed string) bool {
	_, current, err := b.open(sealed)
	return err == nil && !current
}

// Reseal returns sealed sealed again with the current key when a key this
// Box replaces made it (Stale), and whether it did; any other value comes
// back as it is.
func (b *Box) Reseal(sealed string) (string, bool) {
	pt, current, err := b.open(sealed)
	if err != nil || current {
		return sealed, false
	}
	return b.Seal(pt), true
}

func (b *Box) open(sealed string) (pt []byte, current bool, err error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, false, ErrCorrupt
	}
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, false, ErrCorrupt
	}
	n := b.aead.NonceSize()
	if pt, err := b.aead.Open(nil, raw[:n], raw[n:], nil); err == nil {
		return pt, true, nil
	}
	for _, a := range b.previous {
		if pt, err := a.Open(nil, raw[:n], raw[n:], nil); err == nil {
			return pt, false, nil
		}
	}
	return nil, false, ErrCorrupt
}
