package config

import (
	"strings"
	"testing"
)

// TestURLFormsRefusedAsWhatTheyAre: a REDIS_URL whose port is out of range
// (99999, 0) started serve on a Redis it could never dial, as if Redis were
// down; one that does not parse at all (a port that is no number) was said
// to have the wrong scheme. Neither message shows the URL, which may hold a
// password.
func TestURLFormsRefusedAsWhatTheyAre(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"REDIS_URL", "redis://:s3cret@127.0.0.1:99999/0", `REDIS_URL: port "99999" is not from 1 to 65535`},
		{"REDIS_URL", "redis://127.0.0.1:0/0", `REDIS_URL: port "0" is not from 1 to 65535`},
		{"REDIS_URL", "redis-cluster://:s3cret@127.0.0.1:70000", `REDIS_URL: port "70000"`},
		{"REDIS_URL", "redis://:s3cret@127.0.0.1:abc/0", "REDIS_URL: cannot be parsed as a URL"},
		{"DATABASE_URL", "postgres://u:s3cret@[bad/db", "DATABASE_URL: cannot be parsed as a URL"},
	} {
		env := map[string]string{tc.name: tc.value, "QUIVER_SECRET_KEY": "k"}
		_, err := parse(env)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s=%q: err = %v, want %q without the password", tc.name, tc.value, err, tc.want)
		}
	}
	for _, v := range []string{"redis://127.0.0.1:6379/0", "redis://127.0.0.1/0", "rediss://:pw@r.example.com:65535", "redis-sentinel://s1:26379?master_name=m"} {
		if _, err := parse(map[string]string{"REDIS_URL": v}); err != nil {
			t.Errorf("REDIS_URL=%q: %v", v, err)
		}
	}
}
