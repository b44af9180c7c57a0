// Package testdb gives tests their own Postgres database on the machine's
// real server: created fresh for the test binary and dropped at cleanup, so
// packages and runs never collide. It is imported only by tests.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdminURL is the server tests create databases on; QUIVER_TEST_POSTGRES_URL
// overrides it.
func AdminURL() string {
	if u := os.Getenv("QUIVER_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// RedisAddr is the Redis tests use; QUIVER_TEST_REDIS_ADDR overrides it.
func RedisAddr() string {
	if a := os.Getenv("QUIVER_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Postgres creates a new database named after prefix and returns its URL.
// The database is dropped when the test (or benchmark) ends.
func Postgres(tb testing.TB, prefix string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		tb.Fatalf("testdb: connect to %s: %v (is Postgres running?)", AdminURL(), err)
	}
	defer admin.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("quiver_test_%s_%s", prefix, hex.EncodeToString(b))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("testdb: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			tb.Logf("testdb: drop %s: %v", name, err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Logf("testdb: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(AdminURL())
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
