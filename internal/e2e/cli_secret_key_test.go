package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCLIWithoutSecretKey: quiver migrate and quiver keys never open or
// seal a sealed value, so on Postgres they run without QUIVER_SECRET_KEY
// (an operator's migration job or key-issuing script need not hold it),
// while serve refuses to start without it, as it always did. A malformed
// key is refused by every command, not passed over. Before, migrate and
// keys refused to run without the key, and took any value as one.
func TestCLIWithoutSecretKey(t *testing.T) {
	quiverBinary(t)
	env := map[string]string{"DATABASE_URL": testdb.Postgres(t, "nokey"), "QUIVER_DATA_DIR": t.TempDir()}
	run := func(t *testing.T, env map[string]string, args ...string) string {
		t.Helper()
		out, errOut, err := fdRun(t, env, args...)
		if err != nil {
			t.Fatalf("%v without QUIVER_SECRET_KEY: %v\n%s%s", args, err, out, errOut)
		}
		return out
	}
	statusIs := func(t *testing.T, state string) {
		t.Helper()
		for _, l := range strings.Split(strings.TrimSpace(run(t, env, "migrate", "status")), "\n") {
			if !strings.HasSuffix(l, "\t"+state) {
				t.Errorf("migrate status: %q, want every migration %s", l, state)
			}
		}
	}

	statusIs(t, "pending")
	if out := run(t, env, "migrate", "up"); !strings.HasPrefix(out, "applied ") {
		t.Fatalf("migrate up: %q", out)
	}
	statusIs(t, "applied")
	out := run(t, env, "migrate", "down")
	if !strings.HasPrefix(out, "reverted ") {
		t.Fatalf("migrate down: %q", out)
	}
	reverted := strings.Fields(strings.TrimPrefix(out, "reverted "))[0]
	if out := run(t, env, "migrate", "up"); out != "applied "+reverted+"\n" {
		t.Fatalf("migrate up after down: %q, want %s applied again", out, reverted)
	}
	key := fdKeysCreate(t, env, "ops")
	readOnly := fdLastLine(run(t, env, "keys", "create", "--account", "ops", "--read-only"))
	if out := run(t, env, "keys", "revoke", readOnly); out != "revoked\n" {
		t.Fatalf("keys revoke: %q", out)
	}

	// serve still requires the key, with the error it always gave.
	_, errOut, err := fdRun(t, map[string]string{"DATABASE_URL": env["DATABASE_URL"], "QUIVER_ADDR": "127.0.0.1:0"}, "serve")
	const required = "quiver: configuration:\nQUIVER_SECRET_KEY: required when DATABASE_URL is set (32 bytes, base64)\n"
	if err == nil || errOut != required {
		t.Fatalf("serve without QUIVER_SECRET_KEY: %v, stderr %q; want %q", err, errOut, required)
	}

	// A malformed key is refused before anything is done, on Postgres as
	// on the embedded database (whose folder is not made), without the
	// value in the error.
	embedded := map[string]string{"QUIVER_DATA_DIR": filepath.Join(t.TempDir(), "data")}
	for _, base := range []map[string]string{env, embedded} {
		for value, want := range map[string]string{"s3cr3t?": "must be base64", "c2hvcnQ=": "must decode to 32 bytes, got 5"} {
			badEnv := maps.Clone(base)
			badEnv["QUIVER_SECRET_KEY"] = value
			for _, args := range [][]string{
				{"migrate", "status"}, {"migrate", "up"}, {"migrate", "down"},
				{"keys", "create", "--account", "bad"}, {"keys", "revoke", key},
			} {
				out, errOut, err := fdRun(t, badEnv, args...)
				if err == nil || out != "" || !strings.Contains(errOut, "QUIVER_SECRET_KEY: "+want) || strings.Contains(errOut, value) {
					t.Errorf("%v with QUIVER_SECRET_KEY=%s (DATABASE_URL %q): %v, stdout %q, stderr %q; want a refusal naming QUIVER_SECRET_KEY (%s), without the value",
						args, value, base["DATABASE_URL"], err, out, errOut, want)
				}
			}
		}
	}
	if _, err := os.Stat(embedded["QUIVER_DATA_DIR"]); !os.IsNotExist(err) {
		t.Errorf("a command refused for its malformed key made the data dir: %v", err)
	}
	statusIs(t, "applied") // migrate down was refused

	// The database the commands migrated serves with the key, their key
	// (not revoked by the refused revoke) works, and with a secret sealed
	// in it they still run without the key.
	serving := maps.Clone(env)
	serving["QUIVER_SECRET_KEY"] = testserver.TestSecretKey
	base, _ := fdServe(t, serving)
	r := testserver.Do(t, base, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	if r.Status != 201 {
		t.Fatalf("the key keys create made without QUIVER_SECRET_KEY, under serve: %d %s", r.Status, r.Body)
	}
	tool := fdPath("/api/v1/agents/custom-tools/%d/", fdInt(t, fdObject(t, r)["id"]))
	if r := testserver.Do(t, base, key, "POST", tool+"provide-config/", map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-sealed"}}); r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	statusIs(t, "applied")
	second := fdKeysCreate(t, env, "ops")
	if r := testserver.Do(t, base, second, "GET", tool, nil); r.Status != 200 || strings.Contains(string(r.Body), "tvly-sealed") {
		t.Fatalf("a key made without QUIVER_SECRET_KEY beside a sealed secret: %d %s", r.Status, r.Body)
	}
}
