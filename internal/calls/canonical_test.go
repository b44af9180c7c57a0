package calls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
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

// referenceCanonical is the original encoding/json-based implementation of
// Canonical, kept as the oracle for FuzzCanonicalMatchesReference, with
// Canonical's refusal of invalid UTF-8. It cannot judge documents with lone
// surrogate escapes (encoding/json turns them all into U+FFFD): callers
// skip those (hasLoneSurrogate), and TestCanonicalStrings covers them.
func referenceCanonical(doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, errors.New("invalid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var out bytes.Buffer
	out.Grow(len(doc))
	if err := refCanonValue(d, &out); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return out.Bytes(), nil
}

func refCanonValue(d *json.Decoder, out *bytes.Buffer) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	return refCanonToken(d, tok, out)
}

func refCanonToken(d *json.Decoder, tok json.Token, out *bytes.Buffer) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return refCanonObject(d, out)
		case '[':
			out.WriteByte('[')
			for i := 0; d.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := refCanonValue(d, out); err != nil {
					return err
				}
			}
			_, err := d.Token() // ']'
			out.WriteByte(']')
			return err
		}
		return fmt.Errorf("unexpected %v", t)
	case string:
		refWriteString(out, t)
	case json.Number:
		out.WriteString(string(t))
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func refCanonObject(d *json.Decoder, out *bytes.Buffer) error {
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
		if err := refCanonValue(d, &v); err != nil {
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
		refWriteString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

func refWriteString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // one encoding per decoded value
	out.Write(b)
}

// canonicalSeeds are inputs both valid and not, for the tests and the fuzzer.
func canonicalSeeds() []string {
	seeds := []string{
		`{"tool":11,"action":"search","arguments":{"query":"latest AI research papers","max_results":5}}`,
		`{"b":[1,{"c":"x"}],"a":-0.5e10}`,
		`{"b":1,"a":2}`, `{ "a" : 2 , "b" : 1 }`, " \t\r\n{\n\"a\"\t:\r[ ]\n} \n",
		`{}`, `[]`, `[{}]`, `{"a":{}}`, `[[],[[]]]`, `""`, `"x"`, `0`, `-0`, `1`, `true`, `false`, `null`, ` null `,
		// strings
		`{"a":"\u00e9"}`, `{"a":"é"}`, `{"a":"\/"}`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\u001f\u007f\u0080"`,
		`"<>&"`, `"\u003c\u003e\u0026"`, `"\u003C"`, `"a\u2028b\u2029c"`, "\"a\u2028b\u2029c\"", "\"\x7f\"",
		`"\ud83d\ude00"`, `"\uD83D\uDE00"`, "\"😀\"", `"\ud83d"`, `"\ude00"`, `"\ude00\ud83d"`,
		`"\ud83d\ud83d\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\n"`, `"\ufffd"`, "\"\uFFFD\xef\xbf\xbd\"",
		"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\"", "{\"\xff\":1,\"\xfe\":2}",
		"{\"\xff\":1,\"\\ufffd\":2}", "\"\xe2\x80\xa8\"", `{"\u00e9":1,"é":2}`, `{"a":1,"\u0061":2}`,
		`{"<":1,"=":2,";":3,"\u003c":4}`, `{"\u003c":1,"a":2,"&":3}`, `{"\"":1,"\\":2,"/":3}`,
		`{"é":1,"e":2,"f":3,"z":4,"😀":5,"\ud83d":6}`,
		// numbers
		`{"n":12345678901234567890}`, `{"n":12345678901234567891}`, `{"n":1.0}`, `1e2`, `1E+2`, `1e-2`, `-1.5e-007`,
		`0.000000000000000000000000000001`, `123456789012345678901234567890123456789e999999`, `[-0.0,0e0,0E-0]`,
		// nesting, order
		`{"z":{"y":{"x":[1,{"b":2,"a":1}]}},"a":[{"d":0,"c":0}]}`, `[3,2,1]`,
		`{"k":[{"b":"x","a":"y"},{"b":"x","a":"y"}]}`, strings.Repeat("[", 100) + strings.Repeat("]", 100),
		`{"m":1,"l":2,"k":3,"j":4,"i":5,"h":6,"g":7,"f":8,"e":9,"d":10,"c":11,"b":12,"a":13,"n":14,"o":15}`,
		// duplicates
		`{"a":1,"a":2}`, `{"x":{"k":1,"k":1}}`, `{"a":1,"b":2,"a":3}`, `[{"a":1},{"a":1}]`, `{"a":{"a":1},"b":{"a":1}}`,
		// invalid
		``, ` `, `{`, `}`, `[`, `]`, `{"a":`, `{"a":1]`, `[1}`, `{"a":1} {}`, `1 2`, `[1,]`, `[,1]`, `{"a":1,}`, `{,}`,
		`{"a" 1}`, `{"a"::1}`, `{1:2}`, `{a:1}`, `{'a':1}`, `{"a":1 "b":2}`, `[1 2]`, `["a""b"]`, `[1"a"]`,
		`01`, `-01`, `00`, `+1`, `.5`, `1.`, `1.e5`, `1e`, `1e+`, `-`, `--1`, `1ee2`, `0x10`, `NaN`, `Infinity`, `-Infinity`,
		`tru`, `truex`, `nul`, `nulll`, `True`, `[true1]`, `"abc`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\ud800\u12"`,
		"\"a\nb\"", "\"\x00\"", "\"\x1f\"", "\xef\xbb\xbf{}", "{}\x00", "{} x", "[]]", "{}}", "\x00",
		`{"a":1}garbage`, `"a"1`, `{"a":[}`, `{"a":{]}`,
	}
	return seeds
}

func FuzzCanonicalMatchesReference(f *testing.F) {
	for _, s := range canonicalSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if hasLoneSurrogate(in) {
			return
		}
		want, wantErr := referenceCanonical(in)
		got, err := Canonical(in)
		if wantErr == nil && err != nil && nestingDepth(in) > maxCanonicalDepth {
			return // the one deliberate difference: encoding/json's depth limit
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Canonical(%q): err = %v, reference err = %v", in, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q) = %q, reference %q", in, got, want)
		}
		if errors.Is(wantErr, errDuplicateKey) && !errors.Is(err, errDuplicateKey) && validWithoutDupCheck(in) {
			t.Fatalf("Canonical(%q): err = %v, want a duplicate key error", in, err)
		}
	})
}

// nestingDepth is the deepest nesting of [ and { in a document.
func nestingDepth(doc []byte) int {
	depth, max, inString := 0, 0, false
	for i := 0; i < len(doc); i++ {
		switch b := doc[i]; {
		case inString && b == '\\':
			i++
		case b == '"':
			inString = !inString
		case !inString && (b == '[' || b == '{'):
			depth++
			max = maxInt(max, depth)
		case !inString && (b == ']' || b == '}'):
			depth--
		}
	}
	return max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// validWithoutDupCheck reports whether doc is valid JSON, duplicates aside.
func validWithoutDupCheck(doc []byte) bool { return json.Valid(doc) }

func TestCanonicalMatchesReference(t *testing.T) {
	inputs := canonicalSeeds()
	for _, c := range benchBodies() {
		inputs = append(inputs, string(c.doc))
	}
	for _, in := range inputs {
		if hasLoneSurrogate([]byte(in)) {
			continue
		}
		want, wantErr := referenceCanonical([]byte(in))
		got, err := Canonical([]byte(in))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("Canonical(%q): err = %v, reference err = %v", in, err, wantErr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Canonical(%q) = %q, reference %q", in, got, want)
		}
		if errors.Is(wantErr, errDuplicateKey) && !errors.Is(err, errDuplicateKey) {
			t.Errorf("Canonical(%q): err = %v, want a duplicate key error", in, err)
		}
	}
}

func TestCanonicalExact(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : [ 1 , 2.50 , -1e+2 ] , "a" : "<&>" } `: `{"a":"\u003c\u0026\u003e","b":[1,2.50,-1e+2]}`,
		`"\u00e9\u2028\/\u0001\ud83d\ude00\ud800"`:       "\"é\\u2028/\\u0001😀\\ud800\"",
		`{"é":1,"\u003c":2,"z":3}`:                       `{"\u003c":2,"z":3,"é":1}`,
		`"\ufffd"`:                                       "\"\ufffd\"",
	} {
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCanonicalDepth(t *testing.T) {
	for _, c := range []struct {
		open, close string
	}{{"[", "]"}, {`{"a":`, "}"}} {
		ok := strings.Repeat(c.open, maxCanonicalDepth) + "1" + strings.Repeat(c.close, maxCanonicalDepth)
		if _, err := Canonical([]byte(ok)); err != nil {
			t.Errorf("depth %d refused: %v", maxCanonicalDepth, err)
		}
		deep := c.open + ok + c.close
		if _, err := Canonical([]byte(deep)); err == nil {
			t.Errorf("depth %d accepted", maxCanonicalDepth+1)
		}
	}
}

func TestCanonicalAllocs(t *testing.T) {
	doc := benchBodies()[0].doc
	if n := testing.AllocsPerRun(100, func() { _, _ = Canonical(doc) }); n > 1 {
		t.Errorf("Canonical of a typical body allocates %v times, want 1", n)
	}
}

// hasLoneSurrogate reports whether a document has a \uXXXX escape of a
// surrogate that is not the first or second half of a pair.
func hasLoneSurrogate(doc []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(doc) || doc[i] != '\\' || doc[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(doc[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	inString := false
	for i := 0; i < len(doc); i++ {
		switch {
		case doc[i] == '"':
			inString = !inString
		case inString && doc[i] == '\\':
			r, ok := hex4(i)
			switch {
			case !ok:
				i++ // a two-character escape
			case 0xD800 <= r && r < 0xDC00:
				if r2, ok := hex4(i + 6); ok && 0xDC00 <= r2 && r2 < 0xE000 {
					i += 11
					continue
				}
				return true
			case 0xDC00 <= r && r < 0xE000:
				return true
			default:
				i += 5
			}
		}
	}
	return false
}

// TestCanonicalStrings: strings are compared by their decoded value, with
// no two different strings made one.
func TestCanonicalStrings(t *testing.T) {
	// Not valid UTF-8, so not JSON: refused, never replaced by U+FFFD.
	for _, in := range []string{"\"\xff\"", "\"\xfe\"", "\"a\xffb\"", "{\"\xff\":1}", "\"a\xc3\"", "\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\"", "[\"ok\",\"\x80\"]"} {
		if out, err := Canonical([]byte(in)); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("Canonical(%q) = %q, %v; want an invalid UTF-8 error", in, out, err)
		}
	}
	for in, want := range map[string]string{
		`"\ud800"`:                    `"\ud800"`,
		`"\uD800"`:                    `"\ud800"`,
		`"\udbff"`:                    `"\udbff"`,
		`"\uDFFF"`:                    `"\udfff"`,
		`"a\ud83dx"`:                  `"a\ud83dx"`,
		`"\ude00\ud83d"`:              `"\ude00\ud83d"`,
		`"\ud83d\ud83d\ude00"`:        "\"\\ud83d😀\"",
		`"\ud83d\u0041"`:              `"\ud83dA"`,
		`{"\udbff":1,"\ud800":2}`:     `{"\ud800":2,"\udbff":1}`,
		`{"\ufffd":1,"\ud800":2}`:     "{\"\\ud800\":2,\"\ufffd\":1}",
		`{"😀":1,"\ud83d":2}`:          "{\"\\ud83d\":2,\"😀\":1}",
		`{"\ud7ff":1,"\ud800":2}`:     "{\"\ud7ff\":1,\"\\ud800\":2}",
		`{"\ue000":1,"\udfff":2}`:     "{\"\\udfff\":2,\"\ue000\":1}",
		`{"a\ud800b":[{"\udc00":0}]}`: `{"a\ud800b":[{"\udc00":0}]}`,
	} {
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
		again, err := Canonical(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("canonical form of %q is not stable: %q, %v", in, again, err)
		}
	}
	differ := [][2]string{
		{`"\ud800"`, `"\udbff"`}, {`"\ud800"`, `"\ufffd"`}, {`"\udc00"`, `"\udfff"`}, {`"\ud800"`, `"\ud800\ud800"`},
		{`{"\ud800":1}`, `{"\udbff":1}`}, {`{"\ud800":1}`, `{"\ufffd":1}`}, {`"\ud83d"`, `"\ud83d\ude00"`},
	}
	for _, c := range differ {
		a, errA := Canonical([]byte(c[0]))
		b, errB := Canonical([]byte(c[1]))
		if errA != nil || errB != nil || bytes.Equal(a, b) {
			t.Errorf("%s and %s: %q (%v) and %q (%v), want two different bodies", c[0], c[1], a, errA, b, errB)
		}
	}
	// Keys that escape the same code units are the same key.
	for _, in := range []string{`{"\ud800":1,"\uD800":2}`, `{"\ud800x":1,"\uD800\u0078":2}`} {
		if _, err := Canonical([]byte(in)); !errors.Is(err, errDuplicateKey) {
			t.Errorf("Canonical(%q): err = %v, want a duplicate key error", in, err)
		}
	}
	for _, in := range []string{`{"\ud800":1,"\udbff":2}`, `{"\ud800":1,"\ufffd":2}`} {
		if _, err := Canonical([]byte(in)); err != nil {
			t.Errorf("Canonical(%q): %v", in, err)
		}
	}
}

// TestCanonicalText: a string holding a lone surrogate, and only that, is
// ErrLoneSurrogate.
func TestCanonicalText(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"a":"x\ud800y"}`:      true,
		`{"a":"\uDFFF"}`:        true,
		`{"\udbff":1}`:          true,
		`["ok","\ud83d"]`:       true,
		`{"a":"\ud83d\ude00"}`:  false, // a pair: one rune
		`{"a":"\\ud800"}`:       false, // an escaped backslash, then text
		`{"a":"\\\ud800"}`:      true,
		`{"a":"\u00e9 \u2028"}`: false,
		`{"a":"😀 <&> \u0000"}`:  false,
		`{"ud800":"\\\\ud800"}`: false,
	} {
		_, err := CanonicalText([]byte(doc))
		if got := errors.Is(err, ErrLoneSurrogate); got != want || err != nil && !got {
			t.Errorf("%s: %v, want a lone surrogate: %v", doc, err, want)
		}
		if _, err := Canonical([]byte(doc)); err != nil { // Canonical keeps them
			t.Errorf("Canonical(%s): %v", doc, err)
		}
	}
}
