package e2e

// Quiver as subprocesses, for the tests that kill servers, Redis and the
// database link.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// quiverBinary builds cmd/quiver once per test binary (TestMain removes it).
func quiverBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "quiver-e2e-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "quiver")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/quiverhq/quiver/cmd/quiver")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a quiver serve subprocess.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	URL  string
	env  []string
	logs *strings.Builder
	mu   sync.Mutex
	done chan struct{}
}

func envList(env map[string]string) []string {
	out := os.Environ()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc runs quiver serve with env on a free port.
func startProc(t testing.TB, env map[string]string) *proc {
	t.Helper()
	return startProcAs(t, env, quiverBinary(t), "serve")
}

// startProcAs is startProc running name with args, which are to start
// quiver serve: the binary by another path, or under another program.
func startProcAs(t testing.TB, env map[string]string, name string, args ...string) *proc {
	t.Helper()
	p, ready := launchProc(t, env, name, args...)
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("quiver serve exited:\n%s", p.logText())
	case <-time.After(30 * time.Second):
		t.Fatal("quiver serve did not start")
	}
	return p
}

// launchProc starts name with args (to start quiver serve) on a free port
// and returns at once; ready closes when it listens, p.done when it exits.
func launchProc(t testing.TB, env map[string]string, name string, args ...string) (p *proc, ready <-chan struct{}) {
	t.Helper()
	addr := freeAddr(t)
	e := map[string]string{"QUIVER_ADDR": addr}
	for k, v := range env {
		e[k] = v
	}
	p = &proc{t: t, URL: "http://" + addr, env: envList(e), logs: &strings.Builder{}, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Env = p.env
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Quiver listening on") {
				close(listening)
			}
		}
	}()
	go func() {
		io.Copy(procLog{p}, stderr) // as it comes: logText shows a running process's lines too
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p, listening
}

// procLog writes to a proc's logs under its lock.
type procLog struct{ p *proc }

func (l procLog) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	return l.p.logs.Write(b)
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// cpu is the CPU time (user and system, all threads) the process has
// used, read from /proc at the kernel's clock tick (10 ms): good for runs
// of seconds.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / clockTicks)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go runs on but alpha and ia64.
const clockTicks = 100

// kill sends SIGKILL: no shutdown, no cleanup, as a crash.
func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// createKey runs quiver keys create against env's database.
func createKey(t testing.TB, env map[string]string, account string) string {
	t.Helper()
	return createKeyWith(t, quiverBinary(t), env, account)
}

// createKeyWith is createKey run by the quiver binary at bin.
func createKeyWith(t testing.TB, bin string, env map[string]string, account string) string {
	t.Helper()
	cmd := exec.Command(bin, "keys", "create", "--account", account)
	cmd.Env = envList(env)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// redisServer is a redis-server of the test's own on a spare port.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
}

func startRedis(t testing.TB) *redisServer {
	t.Helper()
	return startRedisAt(t, freeAddr(t))
}

// startRedisAt is startRedis on addr, a loopback address from freeAddr:
// for a test whose servers were told of a Redis before it ran.
func startRedisAt(t testing.TB, addr string) *redisServer {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &redisServer{Addr: addr}
	r.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		t.Skipf("redis-server not available: %v", err)
	}
	t.Cleanup(r.stop)
	testserver.Eventually(t, 10*time.Second, "redis to start", func() bool {
		c, err := net.Dial("tcp", r.Addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return r
}

func (r *redisServer) stop() {
	if r.cmd.Process != nil {
		r.cmd.Process.Signal(syscall.SIGKILL)
		r.cmd.Wait()
	}
}

// tcpProxy forwards to target until cut. Given a trigger, a connection on
// which the client sends bytes holding it gets no more answers and is
// closed a moment later: the statement arrives, its answer never does.
type tcpProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	conns   []net.Conn
	cut     bool
	hang    bool // accept, and never forward or answer
	trigger []byte
	fired   chan struct{} // signalled when the trigger fires
	frozen  atomic.Bool   // forward nothing on any connection
}

func startProxy(t testing.TB, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

// postgresBehindProxy returns a database of its own for the test, reached
// through a proxy the test controls: its URL, and the proxy.
func postgresBehindProxy(t testing.TB, name string) (string, *tcpProxy) {
	_, proxied, px := postgresWithProxy(t, name)
	return proxied, px
}

// postgresWithProxy is postgresBehindProxy that also returns the database's
// own URL, for replicas that reach it directly.
func postgresWithProxy(t testing.TB, name string) (direct, proxied string, px *tcpProxy) {
	t.Helper()
	direct = testdb.Postgres(t, name)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px = startProxy(t, u.Host)
	u.Host = px.Addr()
	return direct, u.String(), px
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		if p.hang {
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		var swallowed atomic.Bool
		go func() {
			p.pipe(up, c, func() {
				swallowed.Store(true)
				p.mu.Lock()
				if p.fired != nil {
					select {
					case p.fired <- struct{}{}:
					default:
					}
				}
				p.mu.Unlock()
				time.AfterFunc(300*time.Millisecond, func() { c.Close(); up.Close() })
			}, nil)
			up.Close()
		}()
		go func() { p.pipe(c, up, nil, &swallowed); c.Close() }()
	}
}

// setCut cuts every connection (and refuses new ones) or restores service.
// pipe copies src to dst. From the client it calls triggered once it has
// forwarded bytes holding the trigger; from the target it drops everything
// once swallowed is set.
func (p *tcpProxy) pipe(dst, src net.Conn, triggered func(), swallowed *atomic.Bool) {
	buf := make([]byte, 32<<10)
	fired := false
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.frozen.Load() && (swallowed == nil || !swallowed.Load()) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.mu.Lock()
			trigger := p.trigger
			p.mu.Unlock()
			if triggered != nil && !fired && trigger != nil && bytes.Contains(buf[:n], trigger) {
				fired = true
				triggered()
			}
		}
		if err != nil {
			return
		}
	}
}

// setHang makes new connections hang (or not): accepted, never answered.
func (p *tcpProxy) setHang(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hang = on
}

// freeze makes every connection, open or new, pass nothing either way
// (a server that stalls with its connections open), or lets them flow again.
func (p *tcpProxy) freeze(on bool) {
	p.frozen.Store(on)
	p.setHang(on)
}

// swallowAfter sets the trigger; nil clears it. The channel it returns is
// signalled when the trigger fires.
func (p *tcpProxy) swallowAfter(trigger []byte) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger, p.fired = trigger, make(chan struct{}, 1)
	return p.fired
}

func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

func execCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// fire sends a call whose answer the test does not wait for (its server
// is about to be killed).
func fire(base, key string, body any, idemKey string) {
	req, _ := http.NewRequest("POST", base+callPath, strings.NewReader(mustJSON(body)))
	req.Header.Set("X-API-KEY", key)
	req.Header.Set("Idempotency-Key", idemKey)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}
