// Package secrets encrypts configuration secrets and OAuth tokens at rest
// with AES-256-GCM. It owns the key format and the sealed-value format; it
// never logs or returns plaintext anywhere but to its caller.
package secrets

import (
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

// Box seals and opens values with one key.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
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

// Open decrypts a value made by Seal.
func (b *Box) Open(sealed string) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, ErrCorrupt
	}
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, ErrCorrupt
	}
	n := b.aead.NonceSize()
	pt, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, ErrCorrupt
	}
	return pt, nil
}
