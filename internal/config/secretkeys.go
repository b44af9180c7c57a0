package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/quiverhq/quiver/internal/secrets"
)

// previousKeys reads QUIVER_SECRET_KEY_PREVIOUS: keys separated by commas,
// spaces around each and empty items ignored.
func previousKeys(getenv func(string) string) []string {
	var keys []string
	for _, k := range strings.Split(getenv("QUIVER_SECRET_KEY_PREVIOUS"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// checkPreviousKeys checks QUIVER_SECRET_KEY_PREVIOUS: each item a key,
// none the current key (the same key cannot replace itself), and, on
// Postgres, a current key to seal with. An error never shows a key.
func (c *Config) checkPreviousKeys() error {
	if len(c.SecretKeysPrevious) == 0 {
		return nil
	}
	if c.SecretKey == "" && c.DatabaseURL != "" {
		return errors.New("QUIVER_SECRET_KEY_PREVIOUS: set without QUIVER_SECRET_KEY, the key that replaces them")
	}
	current, _ := secrets.ParseKey(c.SecretKey) // nil when unset or malformed (refused on its own)
	var errs []error
	for i, k := range c.SecretKeysPrevious {
		key, err := secrets.ParseKey(k)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("QUIVER_SECRET_KEY_PREVIOUS: key %d %w (%s)", i+1, err, secretKeyHelp))
		case current != nil && bytes.Equal(key, current):
			errs = append(errs, fmt.Errorf("QUIVER_SECRET_KEY_PREVIOUS: key %d is QUIVER_SECRET_KEY itself; list only the keys it replaces", i+1))
		}
	}
	return errors.Join(errs...)
}
