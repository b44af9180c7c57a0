package calls

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// errDuplicateKey is returned for an object with the same key twice.
var errDuplicateKey = errors.New("duplicate object key")

// Canonical returns the canonical form of a JSON document: object keys
// sorted, no insignificant whitespace, strings by their decoded value
// (re-encoded one way), numbers by their literal text — never through
// float64, so 12345678901234567890 and 12345678901234567891 stay apart. A
// duplicate object key or trailing data is an error.
func Canonical(doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var out bytes.Buffer
	out.Grow(len(doc))
	if err := canonValue(d, &out); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return out.Bytes(), nil
}

func canonValue(d *json.Decoder, out *bytes.Buffer) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	return canonToken(d, tok, out)
}

func canonToken(d *json.Decoder, tok json.Token, out *bytes.Buffer) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonObject(d, out)
		case '[':
			out.WriteByte('[')
			for i := 0; d.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := canonValue(d, out); err != nil {
					return err
				}
			}
			_, err := d.Token() // ']'
			out.WriteByte(']')
			return err
		}
		return fmt.Errorf("unexpected %v", t)
	case string:
		writeString(out, t)
	case json.Number:
		out.WriteString(string(t))
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonObject(d *json.Decoder, out *bytes.Buffer) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	seen := map[string]bool{}
	for d.More() {
		kt, err := d.Token()
		if err != nil {
			return err
		}
		key := kt.(string)
		if seen[key] {
			return fmt.Errorf("%w %q", errDuplicateKey, key)
		}
		seen[key] = true
		var v bytes.Buffer
		if err := canonValue(d, &v); err != nil {
			return err
		}
		members = append(members, member{key, v.Bytes()})
	}
	if _, err := d.Token(); err != nil { // '}'
		return err
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

func writeString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // one encoding per decoded value
	out.Write(b)
}

// Fingerprint is the SHA-256 of a body's canonical JSON.
func Fingerprint(canonical []byte) []byte {
	sum := sha256.Sum256(canonical)
	return sum[:]
}
