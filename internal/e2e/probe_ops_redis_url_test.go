package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
)

// A REDIS_URL that names no host, or a Sentinel URL without the master's
// name, or one whose database number or password Redis refuses, is refused
// at start, naming the variable. Before, go-redis filled
// in localhost:6379 for `redis://` (another deployment's Redis, say), and a
// Sentinel client without a master name served on with every Redis command
// failing: silent defaults, not configuration errors.
func TestProbeOpsRedisURLNeedsHostAndMaster(t *testing.T) {
	cases := map[string]string{
		"no host":                    "redis://",
		"no host, a database":        "redis:///3",
		"password only":              "redis://:secret@/0",
		"sentinel without master":    "redis-sentinel://127.0.0.1:19299",
		"sentinel with empty master": "redis-sentinel://127.0.0.1:19299?master_name=",
		"sentinel without host":      "redis-sentinel://?master_name=mymaster",
		"cluster without host":       "redis-cluster://",
		// Ones Redis itself refuses, and will go on refusing: its
		// database number, its password.
		"database out of range": "redis://" + testdb.RedisAddr() + "/99",
		"password refused":      "redis://nobody:wrong-secret@" + testdb.RedisAddr() + "/0",
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A serve that takes the URL runs until the deadline: a refusal
			// comes long before it.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, quiverBinary(t), "serve")
			cmd.Env = fdEnv(map[string]string{
				"QUIVER_ADDR":     "127.0.0.1:0",
				"QUIVER_DATA_DIR": t.TempDir(),
				"REDIS_URL":       url,
			})
			var e bytes.Buffer
			cmd.Stderr = &e
			err := cmd.Run()
			stderr := e.String()
			if ctx.Err() != nil || err == nil {
				t.Fatalf("REDIS_URL=%s: serve was not refused (%v); stderr:\n%s", url, err, stderr)
			}
			if !strings.Contains(stderr, "REDIS_URL") || strings.Contains(stderr, "quiver listening") {
				t.Fatalf("REDIS_URL=%s: stderr does not refuse it by name before listening:\n%s", url, stderr)
			}
			if strings.Contains(stderr, "secret") {
				t.Fatalf("REDIS_URL=%s: stderr shows the password:\n%s", url, stderr)
			}
		})
	}
}
