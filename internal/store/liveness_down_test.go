package store_test

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// TestWatchSeesTheDatabaseGoAndComeBack, through a proxy in front of a real
// Postgres: a session that answers its probes is kept; cut connections make Watch's store Down; a Postgres that
// answers but refuses the session (too many clients) is up again, though
// no session opens; forwarding again keeps it up with a session open; and a
// Postgres that stops answering without ending anything (frozen) is Down
// too, within a probe and a connect timeout, and up again once it answers.
func TestWatchSeesTheDatabaseGoAndComeBack(t *testing.T) {
	direct := testdb.Postgres(t, "watchdown")
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px := startSwitch(t, u.Host)
	u.Host = px.ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := store.Open(ctx, store.Options{DatabaseURL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	admin, err := store.Open(ctx, store.Options{DatabaseURL: direct})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	watched := make(chan struct{})
	go func() { s.Watch(ctx); close(watched) }()
	t.Cleanup(func() { cancel(); <-watched })

	until := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(within); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not %s within %v", what, within)
			}
		}
	}
	watching := func() bool {
		var n int64
		err := admin.DB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?`,
			store.WatchApplicationName).Scan(&n).Error
		return err == nil && n == 1
	}
	up := func() bool { return !s.Down() }
	until("watching", 5*time.Second, watching)

	// A healthy session outlives its probes: the same session, never down.
	pid := func() (pid int64) {
		t.Helper()
		if err := admin.DB().Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?`,
			store.WatchApplicationName).Scan(&pid).Error; err != nil {
			t.Fatal(err)
		}
		return pid
	}
	first := pid()
	for end := time.Now().Add(5 * time.Second / 2); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s.Down() {
			t.Fatal("down with Postgres answering every probe")
		}
	}
	if now := pid(); now != first {
		t.Fatalf("the watch session was replaced (%d, then %d) with Postgres answering every probe", first, now)
	}

	px.set(modeCut)
	until("down once connections are cut", 3*time.Second, s.Down)
	px.set(modeRefuse)
	until("up while Postgres answers with a refusal of its own", 3*time.Second, up)
	px.set(modeForward)
	until("watching again", 5*time.Second, watching)
	if s.Down() {
		t.Fatal("down while watching")
	}

	px.set(modeFreeze)
	until("down once Postgres stops answering", 8*time.Second, s.Down)
	px.set(modeForward)
	until("up once Postgres answers again", 5*time.Second, up)
	until("watching once Postgres answers again", 5*time.Second, watching)
}

type switchMode int32

const (
	modeForward switchMode = iota
	modeCut                // close every connection, and each new one at once
	modeRefuse             // answer each new connection's startup with FATAL 53300
	modeFreeze             // forward nothing, close nothing
)

// switchProxy stands between a store and Postgres, in the mode set.
type switchProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	mu     sync.Mutex
	conns  []net.Conn
}

func startSwitch(t *testing.T, target string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.set(modeCut) })
	go p.serve()
	return p
}

func (p *switchProxy) set(m switchMode) {
	p.mode.Store(int32(m))
	if m == modeCut {
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
	}
}

func (p *switchProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		switch switchMode(p.mode.Load()) {
		case modeCut:
			c.Close()
		case modeRefuse:
			go refuseStartup(c, "53300", "sorry, too many clients already")
		default:
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}
}

// pipe copies from src to dst, holding what it read while frozen.
func (p *switchProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for switchMode(p.mode.Load()) == modeFreeze {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
