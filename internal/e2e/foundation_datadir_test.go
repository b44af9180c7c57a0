package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// A secret key that cannot open the secrets a database holds is refused at
// start: served, every read of those tools, the account's tool list and
// every call of them would be a 500. A missing key file is not quietly
// replaced by a new key either.
func TestFoundationSecretKeyMustOpenStoredSecrets(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_ADDR": "127.0.0.1:0"}
	key := fdKeysCreate(t, env, "sk")
	var tool int64
	t.Run("seal a secret", func(t *testing.T) {
		base, _ := fdServe(t, env)
		r := testserver.Do(t, base, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
		tool = fdInt(t, fdObject(t, r)["id"])
		r = testserver.Do(t, base, key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", tool),
			map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-sealed"}})
		if r.Status != 200 {
			t.Fatalf("provide-config: %d %s", r.Status, r.Body)
		}
	})
	keyFile := filepath.Join(dir, "secret.key")
	sealedWith, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	other := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	_, errOut, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_ADDR": "127.0.0.1:0", "QUIVER_SECRET_KEY": other}, "serve")
	if err == nil || !strings.Contains(errOut, "QUIVER_SECRET_KEY cannot open the secrets") {
		t.Errorf("serve with another QUIVER_SECRET_KEY: %v %q; want a refusal naming it", err, errOut)
	}
	// Once serve has its logger, its stderr holds JSON lines only, the
	// failure included.
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("serve's stderr has a line that is not JSON: %q", line)
		}
	}

	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = fdRun(t, env, "serve")
	if err == nil || !strings.Contains(errOut, "secret.key is missing") {
		t.Errorf("serve without its key file: %v %q; want a refusal naming it", err, errOut)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("the refused start left a key file behind (%v): the next start would take it for the right one", err)
	}

	if err := os.WriteFile(keyFile, []byte(other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = fdRun(t, env, "serve")
	if err == nil || !strings.Contains(errOut, "secret.key cannot open the secrets") {
		t.Errorf("serve with another key file: %v %q; want a refusal naming it", err, errOut)
	}

	// With its own key back, the tool reads and lists as before.
	if err := os.WriteFile(keyFile, sealedWith, 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := fdServe(t, env)
	if r := testserver.Do(t, base, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", tool), nil); r.Status != 200 {
		t.Errorf("the tool with its own key back: %d %s", r.Status, r.Body)
	}
	if r := testserver.Do(t, base, key, "GET", "/api/v1/agents/custom-tools/", nil); r.Status != 200 {
		t.Errorf("the list with its own key back: %d %s", r.Status, r.Body)
	}
}

// The embedded default's files hold sealed secrets, their key and stored
// call results: only their owner may read them.
func TestFoundationDataFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_ADDR": "127.0.0.1:0"}
	key := fdKeysCreate(t, env, "private")
	base, _ := fdServe(t, env)
	if r := testserver.Do(t, base, key, "POST", "/api/v1/agents/", map[string]any{"name": "a write"}); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) < 3 { // quiver.db, its -wal, secret.key at least
		t.Fatalf("data dir holds %v (%v)", files, err)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group or others", filepath.Base(f), st.Mode().Perm())
		}
	}
}

// The embedded database serves one process. A second serve on its folder is
// refused with a clear word; before, four starting together on a new folder
// failed in migrations ("table accounts already exists", "database is
// locked") or made two first keys. Commands that are not serve may run
// beside it, and race each other's migrations safely.
func TestFoundationOneServePerDataDir(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"QUIVER_DATA_DIR": dir, "QUIVER_ADDR": "127.0.0.1:0"}
	var wg sync.WaitGroup
	keys := make([]string, 4)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, err := fdRun(t, env, "keys", "create", "--account", "racing")
			if err != nil {
				t.Errorf("keys create %d on a new folder: %v\n%s", i, err, errOut)
				return
			}
			keys[i] = fdLastLine(out)
		}()
	}
	wg.Wait()
	base, _ := fdServe(t, env)
	_, errOut, err := fdRun(t, env, "serve")
	if err == nil || !strings.Contains(errOut, "is in use by another quiver serve") {
		t.Fatalf("a second serve on the folder: %v %q; want a refusal", err, errOut)
	}
	// Nor does a migration change the schema under it (migrate down left
	// it answering 500 to everything while ready); status only reads.
	for _, verb := range []string{"down", "up"} {
		if _, errOut, err := fdRun(t, env, "migrate", verb); err == nil || !strings.Contains(errOut, "stop it before migrating") {
			t.Fatalf("migrate %s under a serve: %v %q; want a refusal", verb, err, errOut)
		}
	}
	if out, errOut, err := fdRun(t, env, "migrate", "status"); err != nil || !strings.Contains(out, "applied") {
		t.Fatalf("migrate status under a serve: %v %q %q", err, out, errOut)
	}
	for i, k := range keys {
		if r := testserver.Do(t, base, k, "GET", "/api/v1/agents/", nil); r.Status != 200 {
			t.Errorf("key %d made while racing: %d %s", i, r.Status, r.Body)
		}
	}
}
