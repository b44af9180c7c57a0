package calls

import (
	"bytes"
	"errors"
	"testing"
)

func TestCanonical(t *testing.T) {
	same := [][2]string{
		{`{"b":1,"a":2}`, `{ "a" : 2 , "b" : 1 }`},
		{`{"a":"\u00e9"}`, `{"a":"é"}`},
		{`{"a":"\/"}`, `{"a":"/"}`},
		{"{\"a\":[1, 2,\n3]}", `{"a":[1,2,3]}`},
		{`{"x":{"z":null,"y":true}}`, `{"x":{"y":true,"z":null}}`},
	}
	for _, c := range same {
		a, err := Canonical([]byte(c[0]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Canonical([]byte(c[1]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ: %s vs %s", c[0], c[1], a, b)
		}
	}
	differ := [][2]string{
		{`{"n":12345678901234567890}`, `{"n":12345678901234567891}`},
		{`{"n":1}`, `{"n":1.0}`},
		{`{"tool":11}`, `{"tool":"11"}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
	}
	for _, c := range differ {
		a, _ := Canonical([]byte(c[0]))
		b, _ := Canonical([]byte(c[1]))
		if bytes.Equal(a, b) {
			t.Errorf("%s and %s are the same: %s", c[0], c[1], a)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, `{"x":{"k":1,"k":1}}`, `{"a":1} {}`, `{"a":`, ``, `{"a":1]`} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q) accepted", in)
		}
	}
	_, err := Canonical([]byte(`{"a":1,"a":2}`))
	if !errors.Is(err, errDuplicateKey) {
		t.Errorf("duplicate key error = %v", err)
	}
}

func FuzzCanonicalIsStable(f *testing.F) {
	f.Add([]byte(`{"b":[1,{"c":"x"}],"a":-0.5e10}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c1, err := Canonical(in)
		if err != nil {
			return
		}
		c2, err := Canonical(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable: %s → %s (%v)", c1, c2, err)
		}
	})
}
