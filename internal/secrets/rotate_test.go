package secrets

import (
	"bytes"
	"testing"
)

// TestPreviousKeys: a Box given earlier keys opens what they sealed, seals
// only with its own key, and tells which values are sealed with a key
// other than its own (to be sealed again).
func TestPreviousKeys(t *testing.T) {
	oldKey, newKey, otherKey := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize), bytes.Repeat([]byte{3}, KeySize)
	old, err := New(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	sealedOld := old.Seal([]byte("tvly-old"))

	box, err := New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(sealedOld); err != nil || string(got) != "tvly-old" {
		t.Fatalf("Open of a value sealed with the previous key = %q, %v", got, err)
	}
	if !box.Stale(sealedOld) {
		t.Error("a value sealed with the previous key is not stale")
	}
	sealedNew := box.Seal([]byte("tvly-new"))
	if box.Stale(sealedNew) {
		t.Error("a value sealed with the current key is stale")
	}
	if _, err := old.Open(sealedNew); err != ErrCorrupt {
		t.Fatalf("the previous key opened a value sealed after the rotation: %v", err)
	}
	other, _ := New(otherKey)
	if _, err := box.Open(other.Seal([]byte("x"))); err != ErrCorrupt {
		t.Fatalf("Open of another key's value = %v, want ErrCorrupt", err)
	}
	if box.Stale("not sealed") || box.Stale(other.Seal([]byte("x"))) {
		t.Error("a value no key opens is stale: sealing it again would need to open it")
	}
	if again, ok := box.Reseal(sealedOld); !ok || box.Stale(again) {
		t.Error("Reseal of a value sealed with the previous key did not seal it with the current one")
	} else if pt, err := old.Open(again); err == nil {
		t.Errorf("the previous key opens the resealed value: %q", pt)
	}
	if same, ok := box.Reseal(sealedNew); ok || same != sealedNew {
		t.Error("Reseal changed a value sealed with the current key")
	}
	if _, err := New(newKey, []byte("short")); err == nil {
		t.Error("a short previous key was accepted")
	}
	if _, err := New(newKey, newKey); err == nil {
		t.Error("the current key as a previous one was accepted")
	}
}
