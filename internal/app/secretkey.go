package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
)

// SecretBox returns the box for QUIVER_SECRET_KEY, or for the key file in
// the data folder in the embedded default, which also opens what the keys
// of QUIVER_SECRET_KEY_PREVIOUS sealed. made is the key file's path if this
// call created it, else "".
func SecretBox(cfg *config.Config) (box *secrets.Box, made string, err error) {
	var key []byte
	if cfg.SecretKey != "" {
		key, err = secrets.ParseKey(cfg.SecretKey)
		if err != nil {
			return nil, "", fmt.Errorf("QUIVER_SECRET_KEY: %w", err)
		}
	} else {
		path := keyFile(cfg)
		var created bool
		key, created, err = secrets.LoadOrCreateKeyFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("QUIVER_SECRET_KEY (generated in %s): %w", cfg.DataDir, err)
		}
		if created {
			made = path
		}
	}
	var previous [][]byte
	for i, k := range cfg.SecretKeysPrevious {
		p, err := secrets.ParseKey(k)
		if err != nil { // config.Validate refused it already
			return nil, "", fmt.Errorf("QUIVER_SECRET_KEY_PREVIOUS: key %d %w", i+1, err)
		}
		previous = append(previous, p)
	}
	box, err = secrets.New(key, previous...)
	if err != nil && len(previous) > 0 && cfg.SecretKey == "" {
		// A previous key that is the generated key file's own.
		return nil, "", fmt.Errorf("QUIVER_SECRET_KEY_PREVIOUS (with the key generated in %s): %w", cfg.DataDir, err)
	}
	return box, made, err
}

// checkSecretKey refuses a key that cannot open the secrets the database
// already holds: served, every read and call of those tools would fail.
// made is the key file SecretBox created, removed here if refused, so the
// next start does not take a wrong key for the right one.
func checkSecretKey(ctx context.Context, st *store.Store, box *secrets.Box, cfg *config.Config, made string) error {
	sealed, err := st.SealedSample(ctx)
	if err != nil || sealed == "" {
		return err
	}
	if _, err := box.Open(sealed); err == nil {
		return nil
	}
	const fix = "they were sealed with another key. Start Quiver with the key that sealed them"
	switch {
	case cfg.SecretKey != "":
		return fmt.Errorf("QUIVER_SECRET_KEY cannot open the secrets this database already holds: %s", fix)
	case made != "":
		if err := os.Remove(made); err != nil {
			return fmt.Errorf("%s was missing, and the new key made in its place cannot open the secrets this database already holds (%s); remove that new file: %w", made, fix, err)
		}
		return fmt.Errorf("%s is missing, and a new key cannot open the secrets this database already holds: %s (put its key file back, or set QUIVER_SECRET_KEY)", made, fix)
	default:
		return fmt.Errorf("%s cannot open the secrets this database already holds: %s (put its key file back, or set QUIVER_SECRET_KEY)",
			keyFile(cfg), fix)
	}
}

// keyFile is where the embedded default keeps its generated secret key.
func keyFile(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "secret.key") }

// rekey seals again with QUIVER_SECRET_KEY what the keys it replaces
// (QUIVER_SECRET_KEY_PREVIOUS) sealed (toolconfig.Service.RekeyStored),
// and says whether any is left under them.
func (a *App) rekey(ctx context.Context) {
	n, left, err := a.Tools.RekeyStored(ctx, a.Store)
	switch {
	case err != nil && ctx.Err() == nil:
		a.Logger.Warn("sealing secrets again with QUIVER_SECRET_KEY stopped; it runs again at the next start, and QUIVER_SECRET_KEY_PREVIOUS is still needed", "tools", n, "error", err)
	case err != nil:
		a.Logger.Debug("sealing secrets again with QUIVER_SECRET_KEY stopped with the server", "tools", n)
	case left > 0:
		a.Logger.Warn("sealed secrets again with QUIVER_SECRET_KEY; some tools changed meanwhile still hold values sealed with a previous key, so keep QUIVER_SECRET_KEY_PREVIOUS until a start seals them", "tools", n, "left", left)
	default:
		a.Logger.Info("every tool's secrets are sealed with QUIVER_SECRET_KEY; once every replica runs with it, QUIVER_SECRET_KEY_PREVIOUS can be unset", "tools", n)
	}
}
