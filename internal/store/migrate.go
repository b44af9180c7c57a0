package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/quiverhq/quiver/internal/filelock"
	"github.com/quiverhq/quiver/migrations"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// MigrationStatus is a migration and whether it is applied.
type MigrationStatus struct {
	Migration
	Applied bool
	// Unknown is set for a migration the database has applied that this
	// binary does not have (a newer binary applied it); it has no Up or
	// Down.
	Unknown bool
}

// ErrUnknownMigration is MigrateDown's refusal when the newest migration
// applied to the database is one this binary does not have: reverting its
// own newest would undo one beneath it.
var ErrUnknownMigration = errors.New("store: the newest applied migration is unknown to this binary")

// migrationLockID is the Postgres advisory lock held while migrating, so
// replicas starting together migrate one at a time.
const migrationLockID = 0x5175697665720001

// Migrations returns the embedded migrations of the store's dialect.
func (s *Store) Migrations() ([]Migration, error) {
	return loadMigrations(migrations.FS, string(s.dialect))
}

func loadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		name := e.Name()
		var up bool
		switch {
		case strings.HasSuffix(name, ".up.sql"):
			up = true
		case strings.HasSuffix(name, ".down.sql"):
		default:
			continue
		}
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %s: name must be NNN_name.up.sql or .down.sql", name)
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v, Name: strings.TrimSuffix(strings.TrimSuffix(rest, ".up.sql"), ".down.sql")}
			byVersion[v] = m
		}
		if up {
			m.Up = string(body)
		} else {
			m.Down = string(body)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migrations: %03d_%s needs both an up and a down file", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// withMigrationLock runs fn on one connection holding the migration lock:
// an advisory lock on Postgres, a lock on a file beside SQLite's.
func (s *Store) withMigrationLock(ctx context.Context, fn func(db *gorm.DB) error) error {
	if s.migrateLock != "" {
		unlock, err := filelock.Lock(s.migrateLock)
		if err != nil {
			return fmt.Errorf("store: migration lock %s: %w", s.migrateLock, err)
		}
		defer unlock()
	}
	return s.db.WithContext(ctx).Connection(func(db *gorm.DB) error {
		if s.dialect == Postgres {
			// Another process migrating holds the lock, perhaps for long (or
			// hung): say so, so that a start that waits is not silent.
			var got bool
			if err := db.Raw("SELECT pg_try_advisory_lock(?)", int64(migrationLockID)).Scan(&got).Error; err != nil {
				return interpret(err)
			}
			if !got {
				s.log.Warn("waiting for the migration lock: another process is migrating this database (quiver migrate, or another replica starting); this one goes on when it is done")
				if err := db.Exec("SELECT pg_advisory_lock(?)", int64(migrationLockID)).Error; err != nil {
					return interpret(err)
				}
				s.log.Info("got the migration lock")
			}
			defer db.Exec("SELECT pg_advisory_unlock(?)", int64(migrationLockID))
		}
		return fn(db)
	})
}

func applied(db *gorm.DB) (map[int]bool, error) {
	rows, err := appliedRows(db)
	if err != nil {
		return nil, err
	}
	m := make(map[int]bool, len(rows))
	for _, r := range rows {
		m[r.Version] = true
	}
	return m, nil
}

// createMigrationsTable creates the table of applied migrations, which
// only MigrateUp writes: status and down read a database without one as
// having none applied, and leave it as it was.
func createMigrationsTable(db *gorm.DB) error {
	return interpret(db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)`).Error)
}

// appliedRows is every migration the database records as applied, by
// version.
func appliedRows(db *gorm.DB) ([]Migration, error) {
	// Asked, rather than through gorm's HasTable, which takes a failed
	// query for a missing table.
	q := "SELECT to_regclass('schema_migrations') IS NOT NULL"
	if db.Dialector.Name() != "postgres" {
		q = "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	}
	var exists bool
	if err := db.Raw(q).Scan(&exists).Error; err != nil {
		return nil, interpret(err)
	}
	if !exists {
		return nil, nil
	}
	var rows []Migration
	if err := db.Raw("SELECT version, name FROM schema_migrations ORDER BY version").Scan(&rows).Error; err != nil {
		return nil, interpret(err)
	}
	return rows, nil
}

// unknown returns the applied migrations (rows) that all does not have.
func unknown(all, rows []Migration) []Migration {
	known := make(map[int]bool, len(all))
	for _, m := range all {
		known[m.Version] = true
	}
	var out []Migration
	for _, r := range rows {
		if !known[r.Version] {
			out = append(out, r)
		}
	}
	return out
}

// MigrateUp applies every pending migration, each in its own transaction,
// and returns the ones it applied.
func (s *Store) MigrateUp(ctx context.Context) ([]Migration, error) {
	all, err := s.Migrations()
	if err != nil {
		return nil, err
	}
	var done []Migration
	err = s.withMigrationLock(ctx, func(db *gorm.DB) error {
		if err := createMigrationsTable(db); err != nil {
			return err
		}
		have, err := applied(db)
		if err != nil {
			return err
		}
		for _, m := range all {
			if have[m.Version] {
				continue
			}
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec(m.Up).Error; err != nil {
					return fmt.Errorf("migration %03d_%s: %w", m.Version, m.Name, err)
				}
				return tx.Exec("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", m.Version, m.Name).Error
			})
			if err != nil {
				return err
			}
			done = append(done, m)
		}
		return nil
	})
	return done, err
}

// MigrateDown reverts the newest applied migration and returns it, or nil
// when none is applied.
func (s *Store) MigrateDown(ctx context.Context) (*Migration, error) {
	all, err := s.Migrations()
	if err != nil {
		return nil, err
	}
	var reverted *Migration
	err = s.withMigrationLock(ctx, func(db *gorm.DB) error {
		rows, err := appliedRows(db)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if newest := rows[len(rows)-1]; len(unknown(all, rows[len(rows)-1:])) > 0 {
				return fmt.Errorf("%w: %03d_%s; revert it with the binary that applied it",
					ErrUnknownMigration, newest.Version, newest.Name)
			}
		}
		have, err := applied(db)
		if err != nil {
			return err
		}
		for i := len(all) - 1; i >= 0; i-- {
			m := all[i]
			if !have[m.Version] {
				continue
			}
			reverted = &m
			return db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec(m.Down).Error; err != nil {
					return fmt.Errorf("migration %03d_%s down: %w", m.Version, m.Name, err)
				}
				return tx.Exec("DELETE FROM schema_migrations WHERE version = ?", m.Version).Error
			})
		}
		return nil
	})
	return reverted, err
}

// MigrationStatus lists every migration, this binary's and those the
// database has applied that it does not know (Unknown), by version, and
// whether each is applied.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationStatus, error) {
	all, err := s.Migrations()
	if err != nil {
		return nil, err
	}
	var out []MigrationStatus
	err = s.withMigrationLock(ctx, func(db *gorm.DB) error {
		rows, err := appliedRows(db)
		if err != nil {
			return err
		}
		have := make(map[int]bool, len(rows))
		for _, r := range rows {
			have[r.Version] = true
		}
		for _, m := range all {
			out = append(out, MigrationStatus{Migration: m, Applied: have[m.Version]})
		}
		for _, m := range unknown(all, rows) {
			out = append(out, MigrationStatus{Migration: m, Applied: true, Unknown: true})
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Version < out[j].Version })
		return nil
	})
	return out, err
}
