package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// cutProxy forwards TCP connections to target until cut closes every one
// it holds, as a network failure or a failover that moves an address does.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection the proxy holds, without a word to either side.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a FIN
		}
		c.Close()
	}
	p.conns = nil
}

// via returns dbURL with its host and port replaced by the proxy's.
func (p *cutProxy) via(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// A connection cut under a read (a network failure, a failover that moved
// the database's address), with no word from Postgres: the read runs once
// more, on a live connection, and answers as if nothing had happened;
// before, each replica answered one 503 per cut while the database was up.
func TestReadsAfterTheConnectionsWereCut(t *testing.T) {
	ctx := context.Background()
	dbURL := testdb.Postgres(t, "cut")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := startCutProxy(t, u.Host)
	s, err := store.Open(ctx, store.Options{DatabaseURL: p.via(t, dbURL), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := s.EnsureAccount(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		run  func() error
	}{
		{"the readiness check", func() error { return s.Ready(ctx) }},
		{"a key's read", func() error {
			if _, err := s.GetIdem(ctx, acct.ID, "none"); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		}},
		{"an API key's read", func() error {
			if _, _, err := s.KeyByHash(ctx, "no such hash"); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		}},
		{"a list", func() error { _, _, err := s.ListTools(ctx, acct.ID, store.Page{Limit: 10}); return err }},
	}
	for _, r := range reads {
		if err := r.run(); err != nil { // the pool's connections in use a moment ago
			t.Fatalf("%s before the cut: %v", r.name, err)
		}
		p.cut()
		if err := r.run(); err != nil {
			t.Fatalf("%s first after the connections were cut: %v", r.name, err)
		}
	}
}
