package config

import (
	"strings"
	"testing"
)

// QUIVER_SECRET_KEY_PREVIOUS lists the keys QUIVER_SECRET_KEY replaces,
// comma-separated, while they are rotated out: each must be a key, none
// the current one, and none given without a current key to seal with
// (on Postgres; the embedded default's generated key may be the new one).
func TestSecretKeyPrevious(t *testing.T) {
	const (
		a = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=" // 32 bytes of '*'
		b = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=" // 32 bytes of 1
		c = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=" // 32 bytes of 2
	)
	parse := func(env map[string]string) (*Config, error) {
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		return Parse(func(k string) string { return env[k] }, environ)
	}
	cfg, err := parse(map[string]string{"DATABASE_URL": "postgres://localhost/q", "QUIVER_SECRET_KEY": a, "QUIVER_SECRET_KEY_PREVIOUS": " " + b + " , " + c + ","})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.SecretKeysPrevious) != 2 || cfg.SecretKeysPrevious[0] != b || cfg.SecretKeysPrevious[1] != c {
		t.Fatalf("SecretKeysPrevious = %q, want [%s %s]", cfg.SecretKeysPrevious, b, c)
	}
	if cfg, err := parse(map[string]string{"QUIVER_SECRET_KEY_PREVIOUS": b}); err != nil || len(cfg.SecretKeysPrevious) != 1 {
		t.Fatalf("the embedded default with a previous key: %v, %v", cfg, err)
	}
	for name, env := range map[string]map[string]string{
		"not a key":       {"QUIVER_SECRET_KEY": a, "QUIVER_SECRET_KEY_PREVIOUS": b + ",c2hvcnQ="},
		"the current one": {"QUIVER_SECRET_KEY": a, "QUIVER_SECRET_KEY_PREVIOUS": b + "," + strings.TrimSuffix(a, "=")},
		"no current key":  {"DATABASE_URL": "postgres://localhost/q", "QUIVER_SECRET_KEY_PREVIOUS": b},
	} {
		_, err := parse(env)
		if err == nil || !strings.Contains(err.Error(), "QUIVER_SECRET_KEY") {
			t.Errorf("%s: %v, want a refusal naming the variable", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), b) || strings.Contains(err.Error(), "c2hvcnQ")) {
			t.Errorf("%s: the refusal %q shows a key", name, err)
		}
	}
}
