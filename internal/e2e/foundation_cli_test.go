package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// fdEnv is the process environment without any Quiver configuration of the
// test's own, plus env.
func fdEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "QUIVER_") || name == "DATABASE_URL" || name == "REDIS_URL" {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// fdRun runs the quiver binary to completion.
func fdRun(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, quiverBinary(t), args...)
	cmd.Env = fdEnv(env)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("quiver %v did not finish: %s", args, e.String())
	}
	return o.String(), e.String(), err
}

// fdLastLine is the last non-empty line of s.
func fdLastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var fdKeyRE = regexp.MustCompile(`^qv_[A-Za-z0-9]+$`)

// fdKeysCreate runs `quiver keys create` and returns the key.
func fdKeysCreate(t *testing.T, env map[string]string, account string) string {
	t.Helper()
	out, errOut, err := fdRun(t, env, "keys", "create", "--account", account)
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, errOut)
	}
	key := fdLastLine(out)
	if !fdKeyRE.MatchString(key) {
		t.Fatalf("the last line of keys create is %q, want the key alone; stdout:\n%s", key, out)
	}
	return key
}

// fdServe runs `quiver serve` until the test ends and returns its base URL
// and everything it printed before listening.
func fdServe(t *testing.T, env map[string]string) (base, banner string) {
	t.Helper()
	env["QUIVER_ADDR"] = "127.0.0.1:0"
	cmd := exec.Command(quiverBinary(t), "serve")
	cmd.Env = fdEnv(env)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	var printed strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "Quiver listening on "); ok {
				addr <- a
			} else {
				printed.WriteString(line + "\n")
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("quiver serve did not stop cleanly on SIGINT: %v\n%s", err, errOut.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("quiver serve did not stop within 30s of SIGINT")
		}
	})
	select {
	case a := <-addr:
		return "http://" + a, printed.String()
	case err := <-exited:
		t.Fatalf("quiver serve exited: %v\n%s", err, errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("quiver serve did not listen within 60s:\n%s", errOut.String())
	}
	return "", ""
}

func TestFoundationCLI(t *testing.T) {
	quiverBinary(t)

	t.Run("catalog check", func(t *testing.T) {
		out, errOut, err := fdRun(t, nil, "catalog", "check")
		if err != nil || !strings.Contains(out, "catalog ok") {
			t.Fatalf("catalog check: %v\n%s%s", err, out, errOut)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		if _, _, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir()}, "frobnicate"); err == nil {
			t.Fatal("an unknown command exited 0")
		}
		if _, errOut, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir()}, "keys", "create"); err == nil {
			t.Fatalf("keys create without --account exited 0: %s", errOut)
		}
	})

	t.Run("bad input is a clear error, help is not", func(t *testing.T) {
		env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
		for _, tc := range []struct {
			args []string
			want string // in stderr
		}{
			{[]string{"keys", "create", "--account", "   "}, "not blank"},
			{[]string{"keys", "create", "--account", "a\tb"}, "without control characters"},
			{[]string{"keys", "create", "--account", "a\u0085b"}, "without control characters"}, // C1's NEL, as agent names
			{[]string{"keys", "create", "--account", "a\u2028b"}, "without control characters"},
			{[]string{"keys", "create", "--account", "a\xffb"}, "valid UTF-8"},
			{[]string{"keys", "create", "--account", strings.Repeat("é", 201)}, "at most 200 characters"},
			{[]string{"keys", "create", "--bogus"}, "flag provided but not defined"},
			{[]string{"keys", "revoke", "qv_nope"}, "no such key"},
			{[]string{"serve", "extra"}, "serve takes no arguments"},
			{[]string{"keys", "create", "--account", "a", "--account", "b"}, "given twice"},
			{[]string{"catalog"}, "usage: quiver catalog check"},
		} {
			_, errOut, err := fdRun(t, env, tc.args...)
			if err == nil || !strings.Contains(errOut, tc.want) || strings.Count(errOut, tc.want) != 1 {
				t.Errorf("%v: err %v, stderr %q; want one %q", tc.args, err, errOut, tc.want)
			}
		}
		out, _, err := fdRun(t, env, "keys", "create", "-h")
		if err != nil || !strings.Contains(out, "--account NAME") {
			t.Errorf("keys create -h: %v %q", err, out)
		}
		if out, errOut, err := fdRun(t, env, "keys", "revoke", "--help"); err != nil || !strings.Contains(out, "usage: quiver keys revoke KEY") {
			t.Errorf("keys revoke --help: %v %q %q", err, out, errOut)
		}
		// Every command's help is usage on stdout and exit 0, needs no
		// configuration, and makes no database.
		bare := map[string]string{"QUIVER_DATA_DIR": filepath.Join(t.TempDir(), "data"), "QUIVER_ADDR": "bogus"}
		for _, args := range [][]string{
			{"serve", "--help"}, {"migrate", "--help"}, {"migrate", "-h"}, {"keys", "--help"},
			{"keys", "create", "--help"}, {"catalog", "--help"}, {"catalog", "check", "--help"},
		} {
			if out, errOut, err := fdRun(t, bare, args...); err != nil || !strings.HasPrefix(out, "usage: quiver "+args[0]) {
				t.Errorf("%v: %v, stdout %q, stderr %q", args, err, out, errOut)
			}
		}
		if out, _, _ := fdRun(t, bare, "keys", "--help"); !strings.Contains(out, "--read-only") {
			t.Errorf("keys --help leaves out --read-only: %q", out)
		}
		// A migrate verb it does not know is refused before the database
		// is opened: the embedded one is not made.
		if _, errOut, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": bare["QUIVER_DATA_DIR"]}, "migrate", "bogus"); err == nil || !strings.Contains(errOut, "usage: quiver migrate") {
			t.Errorf("migrate bogus: %v %q", err, errOut)
		}
		if _, err := os.Stat(bare["QUIVER_DATA_DIR"]); !os.IsNotExist(err) {
			t.Errorf("help or a usage error made the data dir: %v", err)
		}
		// A busy address is named, and a start that cannot listen makes no
		// first key (it printed one the next start would not show again).
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		out, errOut, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_ADDR": busy.Addr().String()}, "serve")
		if err == nil || !strings.Contains(errOut, "QUIVER_ADDR: listen") || strings.Contains(out, "API key") {
			t.Errorf("serve on a busy address: %v, stdout %q, stderr %q", err, out, errOut)
		}
		_, errOut, err = fdRun(t, map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable",
			"QUIVER_SECRET_KEY": testserver.TestSecretKey}, "migrate", "status")
		if err == nil || !strings.Contains(errOut, "DATABASE_URL: ") {
			t.Errorf("migrate status with a database that does not answer: %v %q", err, errOut)
		}
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want string
		}{
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_ADDR": "bogus"}, []string{"serve"}, "QUIVER_ADDR"},
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_MCP_URL_NOSUCH": "http://x"}, []string{"serve"}, "QUIVER_MCP_URL_NOSUCH"},
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_SWEEP_INTERVAL": "1ns"}, []string{"serve"}, "QUIVER_SWEEP_INTERVAL"},
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_CALL_TIMEOUT": "1ns"}, []string{"serve"}, "QUIVER_CALL_TIMEOUT"},
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_CALL_TIMEOUT": "2562047h"}, []string{"serve"}, "QUIVER_CALL_TIMEOUT"},
			{map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_OAUTH_GITHUBB_CLIENT_ID": "id", "QUIVER_OAUTH_GITHUBB_CLIENT_SECRET": "s"},
				[]string{"serve"}, "QUIVER_OAUTH_GITHUBB_*: the catalog has no OAuth provider"},
			{map[string]string{"QUIVER_DATA_DIR": "/proc/quiver-cannot-be-here"}, []string{"migrate", "status"}, "QUIVER_DATA_DIR"},
		} {
			if _, errOut, err := fdRun(t, tc.env, tc.args...); err == nil || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v with %v: %v %q, want an error naming %s", tc.args, tc.env, err, errOut, tc.want)
			}
		}
	})

	t.Run("keys create against a served data dir", func(t *testing.T) {
		env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
		k1 := fdKeysCreate(t, env, "x")
		k2 := fdKeysCreate(t, env, " x ") // the same account: names are trimmed
		if k1 == k2 {
			t.Fatal("two keys create runs printed the same key")
		}
		base, banner := fdServe(t, env)
		if strings.Contains(banner, "qv_") {
			t.Errorf("serve printed a new key although an account exists:\n%s", banner)
		}
		r := testserver.Do(t, base, k1, "POST", "/api/v1/agents/", map[string]any{"name": "from the CLI key"})
		if r.Status != 201 {
			t.Fatalf("the created key does not work: %d %s", r.Status, r.Body)
		}
		agent := fdInt(t, fdObject(t, r)["id"])
		// Both keys are account x's.
		if r := testserver.Do(t, base, k2, "GET", fdPath("/api/v1/agents/%d/", agent), nil); r.Status != 200 {
			t.Fatalf("the second key of account x: %d %s", r.Status, r.Body)
		}
		// A key made while the server runs works at once, for its own account.
		k3 := fdKeysCreate(t, env, "y")
		if r := testserver.Do(t, base, k3, "GET", "/api/v1/agents/", nil); r.Status != 200 {
			t.Fatalf("a key made while serving: %d %s", r.Status, r.Body)
		}
		if r := testserver.Do(t, base, k3, "GET", fdPath("/api/v1/agents/%d/", agent), nil); r.Status != 404 {
			t.Fatalf("account y sees account x's agent: %d %s", r.Status, r.Body)
		}
		if r := testserver.Do(t, base, "", "GET", "/api/v1/agents/", nil); r.Status != 401 {
			t.Fatalf("no key: %d", r.Status)
		}
	})

	t.Run("first serve prints a key", func(t *testing.T) {
		env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
		base, banner := fdServe(t, env)
		key := fdLastLine(banner)
		if !fdKeyRE.MatchString(key) {
			t.Fatalf("the first serve printed no key on its last line before listening:\n%s", banner)
		}
		if r := testserver.Do(t, base, key, "GET", "/api/v1/agents/", nil); r.Status != 200 {
			t.Fatalf("the printed key: %d %s", r.Status, r.Body)
		}
	})

	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run("migrate "+backend, func(t *testing.T) {
			env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
			if backend == "postgres" {
				env["DATABASE_URL"] = testdb.Postgres(t, "cli")
				env["QUIVER_SECRET_KEY"] = testserver.TestSecretKey
			}
			status := func() []string {
				t.Helper()
				out, errOut, err := fdRun(t, env, "migrate", "status")
				if err != nil {
					t.Fatalf("migrate status: %v\n%s", err, errOut)
				}
				return strings.Split(strings.TrimSpace(out), "\n")
			}
			for _, l := range status() {
				if !strings.HasSuffix(l, "pending") {
					t.Errorf("before any migration: %q", l)
				}
			}
			out, errOut, err := fdRun(t, env, "migrate", "up")
			if err != nil || !strings.Contains(out, "applied ") {
				t.Fatalf("migrate up: %v\n%s%s", err, out, errOut)
			}
			all := status()
			for _, l := range all {
				if !strings.HasSuffix(l, "applied") {
					t.Errorf("after up: %q", l)
				}
			}
			out, errOut, err = fdRun(t, env, "migrate", "down")
			if err != nil || !strings.HasPrefix(out, "reverted ") {
				t.Fatalf("migrate down: %v\n%s%s", err, out, errOut)
			}
			after := status()
			if len(after) != len(all) || !strings.HasSuffix(after[len(after)-1], "pending") {
				t.Errorf("after down: %v", after)
			}
			for _, l := range after[:len(after)-1] {
				if !strings.HasSuffix(l, "applied") {
					t.Errorf("down reverted more than the last migration: %v", after)
				}
			}
			reverted := strings.Fields(strings.TrimPrefix(out, "reverted "))[0]
			out, errOut, err = fdRun(t, env, "migrate", "up")
			if err != nil || !strings.Contains(out, reverted) {
				t.Fatalf("migrate up after down: %v\n%s%s (want %s applied again)", err, out, errOut, reverted)
			}
			if out, _, err := fdRun(t, env, "migrate", "up"); err != nil || !strings.Contains(out, "up to date") {
				t.Errorf("migrate up when up to date: %v %s", err, out)
			}
			if _, _, err := fdRun(t, env, "migrate", "sideways"); err == nil {
				t.Error("migrate sideways exited 0")
			}
			// The migrated database serves.
			key := fdKeysCreate(t, env, "migrated")
			base, _ := fdServe(t, env)
			if r := testserver.Do(t, base, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"}); r.Status != 201 {
				t.Fatalf("after up, down, up: %d %s", r.Status, r.Body)
			}
		})
	}

	t.Run("bad configuration names the variable", func(t *testing.T) {
		for name, value := range map[string]string{
			"QUIVER_CALL_TIMEOUT":         "soon",
			"QUIVER_IDEMPOTENCY_TTL":      "-1h",
			"QUIVER_EGRESS_ALLOW_PRIVATE": "maybe",
			"DATABASE_URL":                "mysql://db/quiver",
			"QUIVER_PUBLIC_URL":           "not a url",
		} {
			env := map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_ADDR": "127.0.0.1:0", name: value}
			_, errOut, err := fdRun(t, env, "serve")
			if err == nil {
				t.Errorf("serve with %s=%s exited 0", name, value)
				continue
			}
			if !strings.Contains(errOut, name) {
				t.Errorf("serve with %s=%s: the error does not name the variable:\n%s", name, value, errOut)
			}
			if strings.Contains(errOut, "goroutine ") {
				t.Errorf("serve with %s=%s panicked:\n%s", name, value, errOut)
			}
		}
	})
}
