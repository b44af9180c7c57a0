package mcp

// How a tools/call's event stream is bounded.
//
// A server may answer tools/call with an event stream that carries, before
// the answer, any number of other messages: progress and log notifications,
// requests of its own. Each is handled as it comes and dropped; only the
// answer is kept. So the limit, MaxResponseBytes, is on the answer, as on a
// JSON answer, and the other messages share a budget of their own, also
// MaxResponseBytes, over the POST's stream and its resumptions:
//
//	event over the limit, the answer      -> result_too_large (it came, too large)
//	event over the limit, any other       -> errUnanswered
//	other messages past their budget      -> errUnanswered
//
// errUnanswered is an unknown outcome (classify): the call was sent, and no
// answer came. What the client reads of one call's streams is bounded by
// about twice the limit, and what it holds by one event, which the SDK
// (MaxEventSize) and the fast path (events) each bound too.
//
// An event is taken for the answer by the first of its message's top-level
// keys that tells: "result" or "error" (an answer: nothing else on a call's
// stream answers a request of ours), or "method" (a notification or a
// request). An event that has told neither when it passes the limit is not
// taken for the answer: result_too_large says the tool's result came, and
// only an event that showed it was one says so.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
)

// errUnanswered ends a call's event stream that carried more than the
// limit of messages other than the call's answer, or one such message over
// it.
var errUnanswered = errors.New("mcp: the call's event stream carried more than the size limit of other messages, and no answer")

// streamBudget is what a call's event streams (the POST's, and those that
// resume it) have left: it is shared by all of them, which come one after
// another.
type streamBudget struct {
	other    atomic.Int64 // bytes of events other than the answer
	answered atomic.Bool  // an event taken for the answer ended
}

// callAttempt returns the attempt of a tools/call that ctx carries, or nil.
// A GET made with it is the call's: a resumption of its stream, or the
// request a redirect of its POST led to. The session's standalone stream
// never is: the SDK opens it with the session's context.
func callAttempt(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	if a == nil || a.budget == nil {
		return nil
	}
	return a
}

// meterStream returns body, an event stream of the call a records, bounded
// as the file's comment says, with a's budget. a may be nil: the stream is
// then bounded alone, with a budget of its own.
func meterStream(body io.Reader, a *attempt, limit int64) io.Reader {
	s := &callStream{r: body, a: a, max: limit}
	if a != nil {
		s.budget = a.budget
	} else {
		s.budget = new(streamBudget)
	}
	return s
}

// callStream reads a call's event stream through, following its lines,
// events and the top-level keys of its messages as it goes.
type callStream struct {
	r      io.Reader
	a      *attempt
	budget *streamBudget
	max    int64
	err    error // to return from the next Read

	cur     int64 // bytes of the current event so far
	afterCR bool  // the last byte ended a line with CR
	inValue bool  // past the current line's colon
	field   fieldKind
	name    [5]byte // the current line's field name, up to its colon
	nameLen int
	event   [7]byte // the current "event" field's value, without spaces
	evLen   int
	other   bool // the event is named other than "message"
	keys    topKeys
}

type fieldKind uint8

const (
	fieldOther fieldKind = iota
	fieldData
	fieldEvent
)

func (s *callStream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	evStart := 0 // where in p[:n] the current event began
	for i := 0; i < n; {
		if s.afterCR {
			s.afterCR = false
			if p[i] == '\n' {
				if s.cur++; s.cur > s.limit() {
					return s.fail(evStart)
				}
				i++
				continue
			}
		}
		if s.inValue && (s.field == fieldOther || s.field == fieldData && s.keys.told()) {
			// Nothing left to learn from this line: on to its end.
			j := lineEnd(p[i:n])
			if j < 0 {
				j = n - i
			}
			if s.cur += int64(j); s.cur > s.limit() {
				return s.fail(evStart)
			}
			if i += j; i == n {
				break
			}
		}
		b := p[i]
		i++
		if s.cur++; s.cur > s.limit() {
			return s.fail(evStart)
		}
		switch {
		case b == '\n' || b == '\r':
			s.afterCR = b == '\r'
			if s.field == fieldEvent {
				// The SDK and the fast path take only "message" events
				// (or unnamed ones) for messages.
				s.other = s.evLen > 0 && (s.evLen != len("message") || string(s.event[:]) != "message")
			}
			if !s.inValue && s.nameLen == 0 {
				if !s.eventEnd() {
					return s.fail(evStart)
				}
				evStart = i
			}
			s.inValue, s.nameLen, s.field = false, 0, fieldOther
		case !s.inValue && b == ':':
			s.inValue = true
			switch string(s.name[:min(s.nameLen, len(s.name))]) {
			case "data":
				s.field = fieldData
			case "event":
				s.field, s.evLen = fieldEvent, 0
			}
			if s.nameLen > len(s.name) {
				s.field = fieldOther
			}
		case !s.inValue:
			if s.nameLen < len(s.name) {
				s.name[s.nameLen] = b
			}
			s.nameLen++
		case s.field == fieldData:
			s.keys.feed(b)
		case s.field == fieldEvent && b != ' ' && b != '\t':
			if s.evLen < len(s.event) {
				s.event[s.evLen] = b
			}
			s.evLen++
		}
	}
	return n, err
}

// answer reports whether the current event is taken for the call's answer.
func (s *callStream) answer() bool {
	return s.keys.kind == keysAnswer && !s.other && !s.budget.answered.Load()
}

// limit is how long the current event may grow: the limit for the answer,
// and for an event not yet known for what it is; what is left of the
// budget for one known to be another message.
func (s *callStream) limit() int64 {
	if s.answer() || s.keys.kind == keysUntold && !s.other && !s.budget.answered.Load() {
		return s.max
	}
	return s.max - s.budget.other.Load()
}

// fail ends the stream, the current event having grown past its limit:
// result_too_large for the answer, errUnanswered for any other. It hands
// over first the events that ended before it (from the start of p to
// keep): an answer among them is whole.
func (s *callStream) fail(keep int) (int, error) {
	s.err = errUnanswered
	if s.answer() {
		s.err = errTooLarge
	}
	if s.a != nil {
		s.a.mu.Lock()
		if s.err == errTooLarge {
			s.a.rec.tooLarge = true
		} else {
			s.a.rec.unanswered = true
		}
		s.a.mu.Unlock()
	}
	if keep > 0 {
		return keep, nil
	}
	return 0, s.err
}

// eventEnd accounts for the event that a blank line just ended, and
// reports whether the stream may go on.
func (s *callStream) eventEnd() bool {
	if s.answer() {
		s.budget.answered.Store(true)
	} else if s.budget.other.Add(s.cur) > s.max {
		return false
	}
	s.cur, s.other, s.keys = 0, false, topKeys{}
	return true
}

// lineEnd is the index of the first CR or LF in p, or -1.
func lineEnd(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		i = len(p)
	}
	if j := bytes.IndexByte(p[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(p) {
		return -1
	}
	return i
}

// topKeys follows a JSON-RPC message, byte by byte, until one of its
// top-level keys tells whether it is an answer.
type topKeys struct {
	kind      keysKind
	depth     int
	inStr     bool
	escaped   bool
	isKey     bool // the string being read is a top-level key
	expectKey bool
	key       [6]byte
	keyLen    int
}

type keysKind uint8

const (
	keysUntold keysKind = iota
	keysAnswer
	keysOther
	keysEnded // the message ended without telling
)

// told reports whether nothing more is to be learnt from the message.
func (k *topKeys) told() bool { return k.kind != keysUntold }

func (k *topKeys) feed(b byte) {
	if k.inStr {
		switch {
		case k.escaped:
			k.escaped = false
			k.keyLen = len(k.key) + 1 // an escaped key is none of ours
		case b == '\\':
			k.escaped = true
		case b == '"':
			k.inStr = false
			if k.isKey {
				k.sawKey()
			}
		case k.isKey:
			if k.keyLen < len(k.key) {
				k.key[k.keyLen] = b
			}
			k.keyLen++
		}
		return
	}
	switch b {
	case '"':
		k.inStr, k.isKey, k.keyLen = true, k.depth == 1 && k.expectKey, 0
		k.expectKey = false
	case '{', '[':
		k.depth++
		k.expectKey = b == '{' && k.depth == 1
	case '}', ']':
		if k.depth--; k.depth <= 0 {
			k.kind = keysEnded
		}
	case ',':
		k.expectKey = k.depth == 1
	}
}

func (k *topKeys) sawKey() {
	if k.keyLen > len(k.key) {
		return
	}
	switch string(k.key[:k.keyLen]) {
	case "result", "error":
		k.kind = keysAnswer
	case "method":
		k.kind = keysOther
	}
}
