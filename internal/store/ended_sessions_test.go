package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"gorm.io/gorm"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testlog"
	"github.com/quiverhq/quiver/internal/testserver"
)

// Postgres ending every session of the pool at once (pg_terminate_backend,
// a failover, a pooler restarted) leaves the pool's idle connections dead
// without knowing it: each would fail the next statement sent on it with
// FATAL 57P01, and the call endpoint would answer 503 while the database is
// up. The statement that meets the first of them runs again on a new
// session (the readiness check, the reads a call and the API make, a
// reservation), and every statement after it finds a live session.
func TestStatementsAfterPostgresEndedThePoolsSessions(t *testing.T) {
	ctx := context.Background()
	const sessions = 4
	s, dbURL, acct := endedStore(t, "ended", sessions)
	endAll := func(step string) { t.Helper(); endSessions(t, s, dbURL, sessions) }
	agent := &store.Agent{AccountID: acct.ID, Name: "ended", Status: "active"}
	if err := s.CreateAgent(ctx, agent); err != nil {
		t.Fatal(err)
	}
	n := 0
	reserve := func() error {
		n++
		key, tok := fmt.Sprint("ended-", n), fmt.Sprint("lease-ended-", n)
		rec := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: key}
		if ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour); err != nil || ex != nil {
			return fmt.Errorf("reserve: %+v, %w", ex, err)
		}
		got, err := s.GetIdem(ctx, acct.ID, key)
		if err != nil || got.State != store.IdemDispatched || *got.LeaseToken != tok {
			return fmt.Errorf("the reserved row: %+v, %w", got, err)
		}
		return nil
	}
	statements := []struct {
		name string
		run  func() error
	}{
		{"the readiness check", func() error { return s.Ready(ctx) }},
		{"a read", func() error {
			if _, err := s.GetIdem(ctx, acct.ID, "none"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("read: %w", err)
			}
			return nil
		}},
		{"a reservation", reserve},
		{"a key's read", func() error {
			if _, _, err := s.KeyByHash(ctx, "no such hash"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("key read: %w", err)
			}
			return nil
		}},
		{"a tool's read", func() error {
			if _, err := s.GetTool(ctx, acct.ID, 1<<40); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("tool read: %w", err)
			}
			if _, err := s.ToolsByCatalogName(ctx, acct.ID, "tavily"); err != nil {
				return fmt.Errorf("tools by name: %w", err)
			}
			return nil
		}},
		{"an agent's read", func() error {
			if _, err := s.GetAgent(ctx, acct.ID, agent.ID); err != nil {
				return fmt.Errorf("agent read: %w", err)
			}
			return nil
		}},
		{"a list", func() error {
			if _, _, err := s.ListTools(ctx, acct.ID, store.Page{Limit: 10}); err != nil {
				return fmt.Errorf("list: %w", err)
			}
			return nil
		}},
	}
	for _, first := range statements {
		endAll(first.name)
		if err := first.run(); err != nil {
			t.Fatalf("%s first after the sessions ended: %v", first.name, err)
		}
		for _, st := range statements {
			if err := st.run(); err != nil {
				t.Fatalf("%s after %s: %v", st.name, first.name, err)
			}
		}
	}
}

// A reservation whose insert lost its session may have been written all
// the same: sent again, it finds a row holding its own lease token and
// takes it as its own, not as another call's (the call would answer
// request_in_progress to itself, and its key end as outcome_unknown with
// the tool never run). A row written before with the same token stands in
// for that insert here; another call's token still finds the key taken.
func TestReservationSentAgainKnowsItsOwnRow(t *testing.T) {
	ctx := context.Background()
	s, dbURL, acct := endedStore(t, "ownrow", 1)
	rec := func(tok string) *store.IdemRecord {
		return &store.IdemRecord{AccountID: acct.ID, Key: "written", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: "c-" + tok}
	}
	if ex, err := s.Reserve(ctx, rec("mine"), time.Minute, time.Hour); err != nil || ex != nil {
		t.Fatalf("reserve: %+v, %v", ex, err)
	}
	endSessions(t, s, dbURL, 1)
	if ex, err := s.Reserve(ctx, rec("mine"), time.Minute, time.Hour); err != nil || ex != nil {
		t.Fatalf("the reservation sent again after its session ended: %+v, %v; want its own row taken as created", ex, err)
	}
	if ex, err := s.Reserve(ctx, rec("theirs"), time.Minute, time.Hour); err != nil || ex == nil || *ex.LeaseToken != "mine" {
		t.Fatalf("another call's reservation: %+v, %v; want the key taken", ex, err)
	}
}

// The insert sent again may fail where the first did not (Postgres shut
// down, so the new session is refused): the first may still have been
// written, so the error must say so (ErrInterrupted) for the caller to
// release what it may hold, or the key would stay dispatched with the tool
// never run and end as outcome_unknown.
func TestReservationSentAgainThatFailsMayHaveBeenWritten(t *testing.T) {
	ctx := context.Background()
	s, dbURL, acct := endedStore(t, "resentfail", 1)
	tok := "mine"
	rec := &store.IdemRecord{AccountID: acct.ID, Key: "written", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: "c-mine"}
	if ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour); err != nil || ex != nil {
		t.Fatalf("reserve: %+v, %v", ex, err)
	}
	endSessions(t, s, dbURL, 1)
	allowConnections(t, dbURL, false)
	t.Cleanup(func() { allowConnections(t, dbURL, true) })
	ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour)
	if !errors.Is(err, store.ErrInterrupted) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the reservation sent again to a database that refuses sessions: %+v, %v; want ErrUnavailable with ErrInterrupted", ex, err)
	}
}

// Postgres ending the pool's sessions is logged, once for the event and
// not once per connection that meets it, with its SQLSTATE.
func TestEndedSessionsLoggedOnce(t *testing.T) {
	ctx := context.Background()
	const sessions = 3
	logs := &testlog.Buffer{}
	s, dbURL, acct := endedStoreLogged(t, "endedlog", sessions, slog.New(slog.NewTextHandler(logs, nil)))
	endSessions(t, s, dbURL, sessions)
	// Each session in its own transaction, so each meets a dead connection.
	var txs []*gorm.DB
	for range sessions {
		tx := s.DB().Begin()
		txs = append(txs, tx)
	}
	for _, tx := range txs {
		tx.Rollback()
	}
	if _, err := s.GetIdem(ctx, acct.ID, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a read after the sessions ended: %v", err)
	}
	got := logs.String()
	if n := strings.Count(got, "postgres ended sessions of the pool"); n != 1 || !strings.Contains(got, "sqlstate=57P01") {
		t.Fatalf("logged %d times, want once with sqlstate=57P01:\n%s", n, got)
	}
}

// allowConnections lets the database at dbURL take new sessions, or not.
func allowConnections(t *testing.T, dbURL string, allow bool) {
	t.Helper()
	ctx := context.Background()
	u, _ := url.Parse(dbURL)
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", name, allow)); err != nil {
		t.Fatal(err)
	}
}

// endedStore opens a store of at most conns sessions on a Postgres
// database of its own, migrated, with an account named name.
func endedStore(t *testing.T, name string, conns int) (*store.Store, string, *store.Account) {
	t.Helper()
	return endedStoreLogged(t, name, conns, nil)
}

// endedStoreLogged is endedStore with the store's log going to logger.
func endedStoreLogged(t *testing.T, name string, conns int, logger *slog.Logger) (*store.Store, string, *store.Account) {
	t.Helper()
	ctx := context.Background()
	dbURL := testdb.Postgres(t, name)
	s, err := store.Open(ctx, store.Options{DatabaseURL: dbURL, MaxConns: conns, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := s.EnsureAccount(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return s, dbURL, acct
}

// endSessions opens every one of the pool's sessions and uses each twice,
// so that none is new or idle long enough for pgx to ping it before its
// next use, then has Postgres end them all, and waits until they are gone.
func endSessions(t *testing.T, s *store.Store, dbURL string, sessions int) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		var txs []*gorm.DB
		for range sessions {
			tx := s.DB().Begin()
			if err := tx.Exec("SELECT 1").Error; err != nil {
				t.Fatalf("open a session: %v", err)
			}
			txs = append(txs, tx)
		}
		for _, tx := range txs {
			if err := tx.Commit().Error; err != nil {
				t.Fatal(err)
			}
		}
	}
	u, _ := url.Parse(dbURL)
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&n)
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sessions did not end: %d left, %v", n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A session Postgres refuses to make (57P03 while it starts up or shuts
// down, as during every restart) ran nothing: a reservation refused so is
// unavailable, with nothing that may have been written (not
// ErrInterrupted, which would have the engine try to release a key that
// was never reserved, for most of its lease).
func TestReservationRefusedASessionWasNotWritten(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DatabaseURL: refusingPostgres(t, "57P03", "the database system is shutting down")})
	if s == nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	tok := "lease-1"
	rec := &store.IdemRecord{AccountID: 1, Key: "k", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: "c"}
	_, err = s.Reserve(ctx, rec, time.Minute, time.Hour)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrInterrupted) {
		t.Fatalf("a reservation no session could be made for: %v; want ErrUnavailable without ErrInterrupted", err)
	}
}

// refusingPostgres serves, on a loopback port, a Postgres that answers
// every startup with a FATAL of the given code, and returns its URL.
func refusingPostgres(t *testing.T, code, message string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go refuseStartup(c, code, message)
		}
	}()
	return "postgres://u@" + ln.Addr().String() + "/db?sslmode=disable&connect_timeout=2"
}

// refuseStartup answers the startup on c as a Postgres refusing it with a
// FATAL of the given code, then closes c.
func refuseStartup(c net.Conn, code, message string) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	for {
		m, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		if _, ok := m.(*pgproto3.SSLRequest); !ok {
			break
		}
		if _, err := c.Write([]byte{'N'}); err != nil {
			return
		}
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: message})
	_ = be.Flush()
}

// A session Postgres ends for idling past idle_session_timeout (57P05) is
// routine where a DBA sets one: the read that meets it runs again on a
// new session, and nothing is logged.
func TestIdleSessionTimeoutNotLogged(t *testing.T) {
	ctx := context.Background()
	logs := &testlog.Buffer{}
	dbURL := testdb.Postgres(t, "idletimeout")
	var ended atomic.Int64
	s, err := store.Open(ctx, store.Options{DatabaseURL: dbURL + "&options=-c%20idle_session_timeout%3D100", MaxConns: 1,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), SessionEnded: func() { ended.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	testserver.Eventually(t, 10*time.Second, "the idle session to end", func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, strings.TrimPrefix(u.Path, "/")).Scan(&n)
		return err == nil && n == 0
	})
	if _, err := s.GetIdem(ctx, 1, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a read after its idle session ended: %v", err)
	}
	if got := logs.String(); strings.Contains(got, "postgres ended sessions") {
		t.Fatalf("an idle session's timeout was logged:\n%s", got)
	}
	if n := ended.Load(); n != 0 {
		t.Fatalf("an idle session's timeout was counted as an ended session (%d)", n)
	}
}

// Each session of the pool Postgres ended is counted once
// (Options.SessionEnded, quiver_db_sessions_ended_total), as each is met;
// a session Postgres refused to open is not, nor is one it ended for
// idle_session_timeout.
func TestEndedSessionsCounted(t *testing.T) {
	ctx := context.Background()
	const sessions = 3
	var ended atomic.Int64
	dbURL := testdb.Postgres(t, "endedcount")
	s, err := store.Open(ctx, store.Options{DatabaseURL: dbURL, MaxConns: sessions, SessionEnded: func() { ended.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	endSessions(t, s, dbURL, sessions)
	var txs []*gorm.DB
	for range sessions {
		txs = append(txs, s.DB().Begin())
	}
	for _, tx := range txs {
		tx.Rollback()
	}
	if _, err := s.GetIdem(ctx, 1, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a read after the sessions ended: %v", err)
	}
	if n := ended.Load(); n != sessions {
		t.Fatalf("%d ended sessions counted, want %d", n, sessions)
	}

	var refused atomic.Int64
	logs := &testlog.Buffer{}
	r, err := store.Open(ctx, store.Options{DatabaseURL: refusingPostgres(t, "57P03", "the database system is starting up"),
		SessionEnded: func() { refused.Add(1) }, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if r == nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	if err == nil {
		t.Fatal("a Postgres that refuses every session was opened")
	}
	for range 3 {
		if _, err := r.GetIdem(ctx, 1, "none"); err == nil {
			t.Fatal("a read on a Postgres that refuses every session succeeded")
		}
	}
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d sessions Postgres refused to open were counted as ended, want 0", n)
	}
	if got := logs.String(); strings.Contains(got, "postgres ended sessions") {
		t.Fatalf("sessions Postgres refused to open were logged as ended:\n%s", got)
	}
}
