package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// progressEvent is one event of a call's stream carrying a progress
// notification padded to about size bytes, with an event ID when id is set.
func progressEvent(n, size int, id bool) string {
	pad := strings.Repeat("p", max(size-160, 0))
	ev := fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":%d,\"message\":%q}}\n\n", n, pad)
	if id {
		ev = fmt.Sprintf("id: e%d\n", n) + ev
	}
	return ev
}

// notifyingServer answers tools/call with an event stream of progress
// notifications, each about size bytes, total bytes of them (or until the
// client hangs up), then tail(id) (which may block, or be ""), and counts
// what it wrote in written. A resumption (GET with Last-Event-ID) gets
// more of the same.
func notifyingServer(written *atomic.Int64, size int, total int64, ids bool, tail func(r *http.Request, id string) string) *hostileServer {
	notify := func(w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for n, sent := 0, int64(0); sent < total; n++ {
			k, err := io.WriteString(w, progressEvent(n, size, ids))
			sent += int64(k)
			written.Add(int64(k))
			if err != nil {
				return false
			}
			if n%16 == 0 {
				if rc.Flush() != nil {
					return false
				}
			}
		}
		return rc.Flush() == nil
	}
	return &hostileServer{
		onCall: func(w http.ResponseWriter, r *http.Request, id string) {
			if notify(w) && tail != nil {
				io.WriteString(w, tail(r, id))
			}
		},
		onGet: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Last-Event-ID") == "" {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			notify(w)
		},
	}
}

// answerEvent is the event answering call id with text of n bytes.
func answerEvent(id string, n int) string {
	return "event: message\ndata: " + `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("x", n) + `"}]}}` + "\n\n"
}

// TestNotificationsWithoutAnswer: a call whose event stream carries only
// notifications, however many, got no result: the tool was sent the call
// and its outcome is unknown (tool_outcome_unknown, which the call engine
// records as terminal), never result_too_large, which says the tool's
// result came and was too large. On both paths, whether the stream runs
// past MaxResponseBytes, ends, or stalls until the call's deadline; and
// past the limit the client stops reading soon, resumptions included.
func TestNotificationsWithoutAnswer(t *testing.T) {
	const limit = 64 << 10
	const serverStop = 256 << 20
	stall := func(r *http.Request, _ string) string { <-r.Context().Done(); return "" }
	cases := map[string]struct {
		size  int
		total int64
		ids   bool
		tail  func(r *http.Request, id string) string
		wait  time.Duration // the call's time
	}{
		"past the limit":                 {size: 256, total: serverStop, wait: 20 * time.Second},
		"past the limit, with event ids": {size: 256, total: serverStop, ids: true, wait: 20 * time.Second},
		"one past the limit":             {size: 4 * limit, total: 4 * limit, tail: stall, wait: 20 * time.Second},
		"ending":                         {size: 256, total: 16 << 10, wait: 20 * time.Second},
		"stalling":                       {size: 256, total: 16 << 10, tail: stall, wait: 2 * time.Second},
	}
	for name, sdk := range paths {
		for shape, tc := range cases {
			t.Run(name+"/"+shape, func(t *testing.T) {
				t.Parallel()
				var written atomic.Int64
				tool := startHostile(t, notifyingServer(&written, tc.size, tc.total, tc.ids, tc.tail))
				c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk, MaxResponseBytes: limit})
				start := time.Now()
				res, err := c.Call(ctxFor(t, tc.wait), tool, "act", json.RawMessage(`{}`))
				if err == nil {
					t.Fatalf("result %s (error %v); want %s", res.Content, res.IsError, connectors.KindOutcomeUnknown)
				}
				wantKind(t, err, connectors.KindOutcomeUnknown)
				if over := tc.total > limit; over != strings.Contains(err.Error(), "and no answer") {
					t.Errorf("error %q; want it to say the stream carried no answer: %v", err, over)
				}
				if d := time.Since(start); tc.tail == nil && d > tc.wait/2 {
					t.Errorf("took %v to fail", d)
				}
				if n := written.Load(); n > 32<<20 {
					t.Errorf("the client read %d MiB of notifications (limit of a response: %d KiB)", n>>20, limit>>10)
				}
			})
		}
	}
}

// TestNotificationsBeforeAnswer: the limit is on the answer, not on the
// notifications before it, which are handled and dropped: an answer under
// the limit after notifications that, with it, exceed the limit is the
// call's result; an answer over the limit is result_too_large, whether its
// "result" member comes before its ID (as the TypeScript SDK writes it) or
// after.
func TestNotificationsBeforeAnswer(t *testing.T) {
	const limit = 64 << 10
	tsAnswer := func(id string, n int) string {
		return "data: " + `{"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]},"jsonrpc":"2.0","id":` + id + "}\n\n"
	}
	cases := map[string]struct {
		notes  int64 // bytes of notifications
		answer func(id string) string
		big    bool // want result_too_large
	}{
		"together past the limit":      {notes: 48 << 10, answer: func(id string) string { return answerEvent(id, 32<<10) }},
		"answer past the limit":        {notes: 8 << 10, answer: func(id string) string { return answerEvent(id, 2*limit) }, big: true},
		"result first, past the limit": {notes: 8 << 10, answer: func(id string) string { return tsAnswer(id, 2*limit) }, big: true},
	}
	for name, sdk := range paths {
		for shape, tc := range cases {
			t.Run(name+"/"+shape, func(t *testing.T) {
				t.Parallel()
				var written atomic.Int64
				tool := startHostile(t, notifyingServer(&written, 256, tc.notes, false,
					func(_ *http.Request, id string) string { return tc.answer(id) }))
				c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk, MaxResponseBytes: limit})
				res, err := c.Call(ctxFor(t, 20*time.Second), tool, "act", json.RawMessage(`{}`))
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if got := strings.Contains(string(res.Content), "result_too_large"); got != tc.big || res.IsError != tc.big {
					t.Fatalf("result %.200s (error %v); want result_too_large %v", res.Content, res.IsError, tc.big)
				}
			})
		}
	}
}

// TestCallStreamMeter: the meter of a call's event stream passes the
// stream through unchanged and ends it as callstream.go says, however the
// stream is cut into reads.
func TestCallStreamMeter(t *testing.T) {
	const limit = 1 << 10
	note := func(n int) string { return progressEvent(0, n, false) }
	answer := func(n int) string { return answerEvent("7", n) }
	cases := map[string]struct {
		stream string
		want   error // the error the stream ends with (nil: EOF)
		read   int   // how much of it is read before that, -1 for all
	}{
		"answer":                         {note(200) + answer(100), nil, -1},
		"answer with crlf":               {strings.ReplaceAll(note(200)+answer(100), "\n", "\r\n"), nil, -1},
		"answer over the limit":          {note(200) + answer(limit), errTooLarge, len(note(200))},
		"result first, over the limit":   {"data: {\"result\":{\"x\":\"" + strings.Repeat("x", limit) + "\"},\"id\":7}\n\n", errTooLarge, 0},
		"error over the limit":           {"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":1,\"message\":\"" + strings.Repeat("x", limit) + "\"}}\n\n", errTooLarge, 0},
		"a notification over the limit":  {note(200) + note(2*limit), errUnanswered, len(note(200))},
		"notifications over the limit":   {strings.Repeat(note(200), 8), errUnanswered, -2},
		"notifications under the limit":  {strings.Repeat(note(200), 4), nil, -1},
		"answer, then notifications":     {answer(100) + strings.Repeat(note(200), 4), nil, -1},
		"answer, then too many":          {answer(100) + strings.Repeat(note(200), 8), errUnanswered, -2},
		"a named event over the limit":   {"event: other\n" + answer(limit)[len("event: message\n"):], errUnanswered, 0},
		"an untold event over the limit": {"data: {\"params\":\"" + strings.Repeat("x", limit) + "\",\"result\":1}\n\n", errUnanswered, 0},
		"an escaped key over the limit":  {"data: {\"r\\u0065sult\":\"" + strings.Repeat("x", limit) + "\"}\n\n", errUnanswered, 0},
		"a long comment":                 {":" + strings.Repeat("c", 2*limit) + "\n\n" + answer(10), errUnanswered, 0},
		"keys in strings":                {"data: {\"jsonrpc\":\"2.0\",\"method\":\"{\\\"result\\\":1}\",\"params\":\"" + strings.Repeat("x", limit) + "\"}\n\n", errUnanswered, 0},
		"a second answer is other":       {answer(100) + answer(limit), errUnanswered, len(answer(100))},
	}
	for name, tc := range cases {
		for _, oneByte := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/one byte %v", name, oneByte), func(t *testing.T) {
				var src io.Reader = strings.NewReader(tc.stream)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				a := &attempt{budget: new(streamBudget)}
				got, err := readBig(meterStream(src, a, limit))
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if !strings.HasPrefix(tc.stream, string(got)) {
					t.Fatalf("read %q, not the stream's start", got)
				}
				switch {
				case tc.read == -1 && len(got) != len(tc.stream):
					t.Errorf("read %d of %d bytes", len(got), len(tc.stream))
				case tc.read == -2 && len(got) > 2*limit:
					t.Errorf("read %d bytes, past twice the limit", len(got))
				case tc.read >= 0 && !oneByte && len(got) != tc.read:
					t.Errorf("read %d bytes, want %d", len(got), tc.read)
				case tc.read >= 0 && len(got) > tc.read+limit+1:
					t.Errorf("read %d bytes, want at most %d", len(got), tc.read+limit+1)
				}
				st := a.snapshot()
				if st.tooLarge != (tc.want == errTooLarge) || st.unanswered != (tc.want == errUnanswered) {
					t.Errorf("recorded tooLarge %v, unanswered %v", st.tooLarge, st.unanswered)
				}
			})
		}
	}
}

// readBig reads r to its end in reads of up to 1 MiB.
func readBig(r io.Reader) ([]byte, error) {
	var out []byte
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// FuzzCallStreamMeter: whatever the stream and however it is cut into
// reads, the meter hands over the stream's start unchanged, all of it when
// it ends it without an error, ends it only with errTooLarge or
// errUnanswered (recorded alike), and hands over at most about twice the
// limit.
func FuzzCallStreamMeter(f *testing.F) {
	f.Add([]byte(progressEvent(1, 200, true)+answerEvent("7", 100)), uint8(0))
	f.Add([]byte(strings.Repeat(progressEvent(1, 200, false), 3)), uint8(7))
	f.Add([]byte("data: {\"result\":\""+strings.Repeat("x", 600)+"\"}\r\n\r\n"), uint8(1))
	f.Add([]byte("event: x\rdata: {\"method\":1}\r\r:c\n\n"), uint8(3))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		const limit = 512
		a := &attempt{budget: new(streamBudget)}
		var src io.Reader = bytes.NewReader(stream)
		if cut > 0 {
			src = &choppy{r: src, n: int(cut)}
		}
		got, err := readBig(meterStream(src, a, limit))
		if !bytes.HasPrefix(stream, got) {
			t.Fatalf("handed over %q, not the stream's start", got)
		}
		st := a.snapshot()
		switch {
		case err == nil && len(got) != len(stream):
			t.Fatalf("handed over %d of %d bytes, without an error", len(got), len(stream))
		case err != nil && err != errTooLarge && err != errUnanswered:
			t.Fatalf("err = %v", err)
		case st.tooLarge != (err == errTooLarge) || st.unanswered != (err == errUnanswered):
			t.Fatalf("err = %v; recorded tooLarge %v, unanswered %v", err, st.tooLarge, st.unanswered)
		case len(got) > 2*limit+2:
			t.Fatalf("handed over %d bytes (limit %d)", len(got), limit)
		}
	})
}

// choppy reads at most n bytes at a time.
type choppy struct {
	r io.Reader
	n int
}

func (c *choppy) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
