package secrets

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpenRoundTrip(t *testing.T) {
	key, _, err := LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "k", "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	box, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := box.Seal([]byte("tvly-secret"))
	if strings.Contains(sealed, "tvly-secret") {
		t.Fatalf("sealed value shows the plaintext: %s", sealed)
	}
	if sealed == box.Seal([]byte("tvly-secret")) {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
	got, err := box.Open(sealed)
	if err != nil || !bytes.Equal(got, []byte("tvly-secret")) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := New(bytes.Repeat([]byte{7}, KeySize))
	if _, err := other.Open(sealed); err != ErrCorrupt {
		t.Fatalf("Open with another key = %v, want ErrCorrupt", err)
	}
	if _, err := box.Open(sealed[:len(sealed)-2]); err != ErrCorrupt {
		t.Fatalf("Open of a truncated value = %v, want ErrCorrupt", err)
	}
}

func TestKeyFileIsStable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	a, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("first load: created %v, %v; want a new file", created, err)
	}
	b, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(a, b) {
		t.Fatalf("second load = %x, created %v, %v; want %x from the file", b, created, err, a)
	}
}

func TestParseKey(t *testing.T) {
	if _, err := ParseKey("c2hvcnQ="); err == nil {
		t.Fatal("a short key was accepted")
	}
	if _, err := ParseKey("not base64!"); err == nil {
		t.Fatal("a non-base64 key was accepted")
	}
	if _, err := ParseKey(strings.Repeat("A", 43) + "="); err != nil {
		t.Fatalf("a valid key was refused: %v", err)
	}
}
