package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestKeysCreateFlagAsName: `quiver keys create --account --read-only`
// (the name forgotten) made an account named "--read-only" and gave it a
// full key, where a read-only one was asked for. A flag given as the name
// is refused, and nothing is made.
func TestKeysCreateFlagAsName(t *testing.T) {
	t.Setenv("QUIVER_DATA_DIR", t.TempDir())
	for _, args := range [][]string{
		{"keys", "create", "--account", "--read-only"},
		{"keys", "create", "--account", "-read-only"},
		{"keys", "create", "--account", "--read-only=true"},
		{"keys", "create", "--read-only", "--account", "--account"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), "--account") || !strings.Contains(err.Error(), "is a flag") || out.Len() != 0 {
			t.Errorf("%v: err = %v, stdout %q; want a refusal saying the name is a flag, and no key", args, err, out.String())
		}
	}
}

// TestKeysCreateSaysReadOnly: the line before a read-only key says it is
// one, so that whoever copies it knows what it can do; a full key's line
// is as it was.
func TestKeysCreateSaysReadOnly(t *testing.T) {
	t.Setenv("QUIVER_DATA_DIR", t.TempDir())
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--account", "ops", "--read-only"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, `Read-only API key for account "ops" (id `) {
		t.Errorf("read-only key: %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"keys", "create", "--account", "ops"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, `API key for account "ops" (id `) {
		t.Errorf("full key: %q", out.String())
	}
}

// TestKeysRevokeTrimsAndSaysMalformed: a key pasted with the space or line
// break beside it was "no such key", and kept working; it is the key
// without them. Something that is no API key at all is said to be none,
// not looked for.
func TestKeysRevokeTrimsAndSaysMalformed(t *testing.T) {
	t.Setenv("QUIVER_DATA_DIR", t.TempDir())
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--account", "ops"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	key := lines[len(lines)-1]
	out.Reset()
	if err := run(context.Background(), []string{"keys", "revoke", " " + key + "\n"}, &out, new(bytes.Buffer)); err != nil || out.String() != "revoked\n" {
		t.Fatalf("revoke of the key with space around it: %v, %q", err, out.String())
	}
	err := run(context.Background(), []string{"keys", "revoke", key}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "already revoked") {
		t.Errorf("second revoke: %v", err)
	}
	err = run(context.Background(), []string{"keys", "revoke", "notakey"}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "is not an API key") || strings.Contains(err.Error(), "notakey") {
		t.Errorf("revoke notakey: %v, want it said to be no API key, without quoting it", err)
	}
}

// TestKeysCreateInvisibleName: an account name of only invisible
// characters (a zero-width space) is as blank as one of spaces, and
// refused the same way.
func TestKeysCreateInvisibleName(t *testing.T) {
	t.Setenv("QUIVER_DATA_DIR", t.TempDir())
	var out bytes.Buffer
	err := run(context.Background(), []string{"keys", "create", "--account", "\u200b\ufeff"}, &out, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "not blank") || out.Len() != 0 {
		t.Errorf("invisible account name: %v, stdout %q", err, out.String())
	}
}
