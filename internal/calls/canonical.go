package calls

// Canonical is a hand-rolled, single-pass scanner over the document's bytes.
// It guarantees:
//
//   - it accepts exactly one RFC 8259 JSON value, optionally surrounded by
//     whitespace, nested at most maxCanonicalDepth deep; anything else is an
//     error, and a repeated object key (compared after decoding) is an error
//     wrapping errDuplicateKey;
//   - a string that is not valid UTF-8 is an error: such a document is not
//     JSON (RFC 8259 §8.1), and decoding it would make different bytes the
//     same body;
//   - its output is byte-identical to decoding the document with
//     encoding/json (UseNumber) and re-encoding it with json.Marshal with
//     object keys sorted: strings by their decoded value re-encoded as
//     json.Marshal encodes them (<, > and & as \u003c…, U+2028/U+2029
//     escaped), numbers by their literal text, never through float64 — with
//     one exception: a lone surrogate escape (\ud800 with no low surrogate
//     after it) is kept as its UTF-16 code unit, written \udxxx in lower
//     case, where encoding/json would turn every one into U+FFFD;
//   - strings that need no escaping are copied through, and for a typical
//     body the only allocation is the returned slice.
//
// Why lone surrogates are kept rather than refused here: they are valid
// JSON syntax (RFC 8259 §7 allows any \uXXXX; §8.2 only warns that such
// strings are unpredictable), so the scanner keeps them, comparing them by
// code unit (\ud800, \udbff and \ufffd are three bodies; \uD800 and
// \ud800 one), and its callers decide: the call engine and the API's
// decoder (CanonicalText) refuse them as not text, since decoding them for
// the tool or for storage gives U+FFFD.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/quiverhq/quiver/internal/problem"
)

// errDuplicateKey is returned for an object with the same key twice.
var errDuplicateKey = errors.New("duplicate object key")

const (
	// maxCanonicalDepth is encoding/json's nesting limit.
	maxCanonicalDepth = 10000

	// strSafeLo and strSafeHi are bitsets of the ASCII bytes json.Marshal
	// writes unchanged inside a string: 0x00–0x3F and 0x40–0x7F.
	strSafeLo uint64 = (1<<64 - 1<<0x20) &^ (1<<'"' | 1<<'&' | 1<<'<' | 1<<'>')
	strSafeHi uint64 = (1<<64 - 1) &^ (1 << ('\\' - 0x40))

	hexDigits = "0123456789abcdef"
)

// Canonical returns the canonical form of a JSON document: object keys
// sorted, no insignificant whitespace, strings by their decoded value
// (re-encoded one way), numbers by their literal text — never through
// float64, so 12345678901234567890 and 12345678901234567891 stay apart. A
// duplicate object key or trailing data is an error.
func Canonical(doc []byte) ([]byte, error) {
	out, _, err := canonical(doc, nil)
	return out, err
}

// ErrLoneSurrogate is the API's refusal of a body with a string holding a
// lone surrogate (\ud800 without its pair): that is no text, and decoding
// it would put U+FFFD in its place.
var ErrLoneSurrogate error = problem.New(problem.InvalidJSON, "The request body is not valid JSON text: a string holds a lone surrogate escape (\\ud800 to \\udfff without its pair).")

// CanonicalText is Canonical for a document that must be text: a string
// holding a lone surrogate is ErrLoneSurrogate.
func CanonicalText(doc []byte) ([]byte, error) {
	out, lone, err := canonical(doc, nil)
	if err == nil && lone {
		return nil, ErrLoneSurrogate
	}
	return out, err
}

// callMembers are the raw values, as they appear in the document, of a
// top-level object's members named exactly "tool", "action" and
// "arguments" (after decoding, so "\u0074ool" is "tool" but "TOOL" is
// not); nil for an absent member. lone says a string of the document held
// a lone surrogate.
type callMembers struct {
	tool, action, arguments []byte
	lone                    bool
}

// canonicalCall is Canonical that also picks out a call body's members in
// the same pass.
func canonicalCall(doc []byte) ([]byte, callMembers, error) {
	var m callMembers
	out, lone, err := canonical(doc, &m)
	m.lone = lone
	return out, m, err
}

// canonical runs the canonicalizer over doc, and reports whether a string
// held a lone surrogate.
func canonical(doc []byte, top *callMembers) (out []byte, lone bool, err error) {
	c := canonicalizer{doc: doc, out: make([]byte, 0, 2*len(doc)), top: top}
	if err := c.value(); err != nil {
		return nil, false, err
	}
	c.skipSpace()
	if c.pos != len(doc) {
		return nil, false, fmt.Errorf("unexpected data after the JSON value (offset %d)", c.pos)
	}
	return c.out, c.lone, nil
}

// Fingerprint is the SHA-256 of a body's canonical JSON.
func Fingerprint(canonical []byte) []byte {
	sum := sha256.Sum256(canonical)
	return sum[:]
}

// canonMember is one member of an object being canonicalized.
type canonMember struct {
	// key is its decoded key: its canonical text in out or, if that differs,
	// its decoding in keys. Neither is overwritten while the object is open
	// (an append that grows them leaves the old bytes in place).
	key  []byte
	s, e int // its canonical `"key":value`: out[s:e]
}

// canonicalizer is one run of Canonical. The output buffer is allocated
// twice the document's size so that reordering an object's members, which
// uses the free tail of out as scratch, does not usually grow it.
type canonicalizer struct {
	doc   []byte
	pos   int // next byte of doc to read
	depth int
	out   []byte
	keys  []byte       // decoded keys, of the open objects' members, that differ from their canonical text
	top   *callMembers // if set, receives the top-level object's call members
	lone  bool         // a string held a lone surrogate
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.doc) {
		switch c.doc[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) errEOF() error {
	return errors.New("unexpected end of JSON input")
}

func (c *canonicalizer) errChar(context string) error {
	return fmt.Errorf("invalid character %q %s (offset %d)", c.doc[c.pos:c.pos+1], context, c.pos)
}

func (c *canonicalizer) value() error {
	c.skipSpace()
	if c.pos >= len(c.doc) {
		return c.errEOF()
	}
	switch b := c.doc[c.pos]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		_, err := c.str(false)
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	return c.errChar("looking for beginning of value")
}

func (c *canonicalizer) enter() error {
	if c.depth++; c.depth > maxCanonicalDepth {
		return fmt.Errorf("exceeded max depth %d (offset %d)", maxCanonicalDepth, c.pos)
	}
	return nil
}

func (c *canonicalizer) array() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.doc) && c.doc[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		c.depth--
		return nil
	}
	for {
		if err := c.value(); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.doc) {
			return c.errEOF()
		}
		switch c.doc[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			c.depth--
			return nil
		default:
			return c.errChar("after array element")
		}
	}
}

func (c *canonicalizer) object() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++ // {
	c.out = append(c.out, '{')
	keyBase, start := len(c.keys), len(c.out)
	c.skipSpace()
	if c.pos < len(c.doc) && c.doc[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		c.depth--
		return nil
	}
	var small [12]canonMember // enough for most objects without allocating
	ms := small[:0]
	for {
		c.skipSpace()
		if c.pos >= len(c.doc) {
			return c.errEOF()
		}
		if c.doc[c.pos] != '"' {
			return c.errChar("looking for beginning of object key string")
		}
		if len(ms) > 0 {
			c.out = append(c.out, ',')
		}
		m := canonMember{s: len(c.out)}
		ks := len(c.keys)
		escaped, err := c.str(true)
		if err != nil {
			return err
		}
		if escaped {
			m.key = c.keys[ks:len(c.keys):len(c.keys)]
		} else {
			m.key = c.out[m.s+1 : len(c.out)-1 : len(c.out)-1]
		}
		c.skipSpace()
		if c.pos >= len(c.doc) {
			return c.errEOF()
		}
		if c.doc[c.pos] != ':' {
			return c.errChar("after object key")
		}
		c.pos++
		c.out = append(c.out, ':')
		c.skipSpace()
		vs := c.pos
		if err := c.value(); err != nil {
			return err
		}
		if c.top != nil && c.depth == 1 {
			c.top.set(m.key, c.doc[vs:c.pos:c.pos])
		}
		m.e = len(c.out)
		ms = append(ms, m)
		c.skipSpace()
		if c.pos >= len(c.doc) {
			return c.errEOF()
		}
		if c.doc[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.doc[c.pos] != '}' {
			return c.errChar("after object key:value pair")
		}
		c.pos++
		break
	}
	if err := c.sortMembers(ms, start); err != nil {
		return err
	}
	c.out = append(c.out, '}')
	c.keys = c.keys[:keyBase]
	c.depth--
	return nil
}

// set keeps v if key names a call member. A repeated key never gets here
// twice in a valid document: sortMembers refuses it.
func (m *callMembers) set(key, v []byte) {
	switch string(key) {
	case "tool":
		m.tool = v
	case "action":
		m.action = v
	case "arguments":
		m.arguments = v
	}
}

// sortMembers puts the members of one object, written to out[start:] in
// document order and separated by commas, in key order, and refuses a
// duplicate key.
func (c *canonicalizer) sortMembers(ms []canonMember, start int) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		if string(ms[i-1].key) >= string(ms[i].key) {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	if len(ms) <= 16 {
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			j := i
			for ; j > 0 && string(ms[j-1].key) > string(m.key); j-- {
				ms[j] = ms[j-1]
			}
			ms[j] = m
		}
	} else {
		slices.SortFunc(ms, func(a, b canonMember) int { return bytes.Compare(a.key, b.key) })
	}
	for i := 1; i < len(ms); i++ {
		if string(ms[i-1].key) == string(ms[i].key) {
			return fmt.Errorf("%w %q", errDuplicateKey, ms[i].key)
		}
	}
	// Copy the members to the free tail of out, then back in order.
	mid := len(c.out)
	c.out = append(c.out, c.out[start:]...)
	tmp := c.out[mid:]
	w := start
	for i, m := range ms {
		if i > 0 {
			c.out[w] = ','
			w++
		}
		w += copy(c.out[w:], tmp[m.s-start:m.e-start])
	}
	c.out = c.out[:mid]
	return nil
}

func (c *canonicalizer) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if c.pos >= len(c.doc) {
			return c.errEOF()
		}
		if c.doc[c.pos] != lit[i] {
			return c.errChar("in literal " + lit)
		}
		c.pos++
	}
	c.out = append(c.out, lit...)
	return nil
}

// number copies a number's text after checking it against
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *canonicalizer) number() error {
	doc, start := c.doc, c.pos
	if doc[c.pos] == '-' {
		c.pos++
	}
	if c.pos >= len(doc) {
		return c.errEOF()
	}
	switch {
	case doc[c.pos] == '0':
		c.pos++
	case '1' <= doc[c.pos] && doc[c.pos] <= '9':
		c.pos++
		c.digits()
	default:
		return c.errChar("in numeric literal")
	}
	if c.pos < len(doc) && doc[c.pos] == '.' {
		c.pos++
		if err := c.someDigits(); err != nil {
			return err
		}
	}
	if c.pos < len(doc) && (doc[c.pos] == 'e' || doc[c.pos] == 'E') {
		c.pos++
		if c.pos < len(doc) && (doc[c.pos] == '+' || doc[c.pos] == '-') {
			c.pos++
		}
		if err := c.someDigits(); err != nil {
			return err
		}
	}
	c.out = append(c.out, doc[start:c.pos]...)
	return nil
}

func (c *canonicalizer) digits() {
	for c.pos < len(c.doc) && '0' <= c.doc[c.pos] && c.doc[c.pos] <= '9' {
		c.pos++
	}
}

func (c *canonicalizer) someDigits() error {
	if c.pos >= len(c.doc) {
		return c.errEOF()
	}
	if c.doc[c.pos] < '0' || c.doc[c.pos] > '9' {
		return c.errChar("in numeric literal")
	}
	c.digits()
	return nil
}
