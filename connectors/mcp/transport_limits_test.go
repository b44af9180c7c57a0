package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
)

// interceptedServer serves an SDK MCP server of five read-only tools, one a
// page, at /mcp, except that each tools/list POST goes to onList, which may
// answer it itself or pass it to next (the SDK's handler).
func interceptedServer(t testing.TB, onList func(w http.ResponseWriter, r *http.Request, next http.Handler)) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "intercepted", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 1})
	for i := range 5 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%d", i), InputSchema: map[string]any{"type": "object"},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
			})
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "cannot read body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var peek struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &peek) == nil && peek.Method == "tools/list" {
				onList(w, r, sdk)
				return
			}
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// streamBody answers with status and size bytes generated as they are
// written, never held in memory, adding what it managed to write to
// written. It stops at the first failed write: the client hung up.
func streamBody(w http.ResponseWriter, status int, size int64, written *atomic.Int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for sent := int64(0); sent < size; {
		n, err := w.Write(chunk[:min(int64(len(chunk)), size-sent)])
		sent += int64(n)
		written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// TestHugeErrorBodyIsCapped: a server answering tools/list with a 64 MiB
// HTTP 400, during configuration (Verify) or discovery (Actions), gets no
// further than MaxResponseBytes read from it, and the request fails
// promptly as a refusal. Not parallel: it measures the process's
// allocations.
func TestHugeErrorBodyIsCapped(t *testing.T) {
	const size = 64 << 20
	const limit = 1 << 20
	for _, via := range []string{"verify", "actions"} {
		t.Run(via, func(t *testing.T) {
			var written atomic.Int64
			done := make(chan struct{}, 8)
			hs := interceptedServer(t, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
				defer func() { done <- struct{}{} }()
				streamBody(w, http.StatusBadRequest, size, &written)
			})
			c := setup(t, &Options{AllowPrivate: true, MaxResponseBytes: limit})
			ctx := ctxFor(t, 20*time.Second)
			config := map[string]string{"url": hs.URL + "/mcp"}

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			var err error
			if via == "verify" {
				err = c.Verify(ctx, customEntry, config)
			} else {
				_, err = c.Actions(ctx, &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: config, Version: 1})
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)

			if err == nil || !strings.Contains(err.Error(), "HTTP 400") {
				t.Fatalf("err = %v, want a refusal naming HTTP 400", err)
			}
			if via == "actions" {
				wantKind(t, err, connectors.KindUpstreamRefused)
			} else {
				wantField(t, err, "url", "HTTP 400")
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %v to fail", elapsed)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the server was still writing its body 10s after the request failed")
			}
			t.Logf("the server wrote %d KiB; %d KiB allocated", written.Load()>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
			// What the client did not read sits in socket buffers: a few MiB
			// at most, far short of the whole body.
			if n := written.Load(); n >= 32<<20 {
				t.Errorf("the server wrote %d MiB of its %d MiB body", n>>20, size>>20)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d >= 32<<20 {
				t.Errorf("allocated %d MiB while failing", d>>20)
			}
		})
	}
}

// TestRoundTripperCapsEveryBody: every body read through the round tripper
// ends with errTooLarge past the limit, whatever its status and whether or
// not the request claimed an attempt. A refused response still keeps the
// start of its body for classify, and only a result (2xx) that is too
// large is recorded as one.
func TestRoundTripperCapsEveryBody(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		size, _ := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		streamBody(w, status, size, &written)
	}))
	t.Cleanup(hs.Close)
	rt := &roundTripper{base: hs.Client().Transport, target: &target{}, maxBytes: limit}

	cases := []struct {
		method   string
		claim    bool // the request carries an attempt to claim
		status   int
		size     int64
		tooLarge bool // the attempt records a result too large
	}{
		{http.MethodPost, true, http.StatusBadRequest, 8 * limit, false},
		{http.MethodPost, true, http.StatusUnauthorized, 8 * limit, false},
		{http.MethodPost, true, http.StatusInternalServerError, 8 * limit, false},
		{http.MethodPost, true, http.StatusOK, 8 * limit, true},
		{http.MethodPost, false, http.StatusBadRequest, 8 * limit, false},
		{http.MethodPost, false, http.StatusOK, 8 * limit, false},
		{http.MethodGet, false, http.StatusOK, 8 * limit, false}, // not an event stream
		{http.MethodGet, false, http.StatusNotFound, 8 * limit, false},
		{http.MethodDelete, false, http.StatusBadRequest, 8 * limit, false},
		// At or under the limit, bodies read whole.
		{http.MethodPost, true, http.StatusBadRequest, limit, false},
		{http.MethodPost, true, http.StatusOK, limit, false},
		{http.MethodGet, false, http.StatusOK, limit, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s,claim=%v,%d,%d", tc.method, tc.claim, tc.status, tc.size), func(t *testing.T) {
			t.Parallel()
			a := &attempt{}
			ctx := ctxFor(t, 10*time.Second)
			if tc.claim {
				ctx = withAttempt(ctx, a)
			}
			url := fmt.Sprintf("%s/?status=%d&size=%d", hs.URL, tc.status, tc.size)
			req, err := http.NewRequestWithContext(ctx, tc.method, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if tc.size > limit {
				if !errors.Is(err, errTooLarge) || n > limit {
					t.Fatalf("read %d bytes, err = %v; want at most %d, then errTooLarge", n, err, limit)
				}
			} else if err != nil || n != tc.size {
				t.Fatalf("read %d bytes, err = %v; want all %d", n, err, tc.size)
			}
			st := a.snapshot()
			if !tc.claim {
				if st.started {
					t.Fatal("an attempt nobody offered was recorded")
				}
				return
			}
			if st.status != tc.status || st.tooLarge != tc.tooLarge {
				t.Errorf("recorded status %d, tooLarge %v; want %d, %v", st.status, st.tooLarge, tc.status, tc.tooLarge)
			}
			if refused := tc.status > 299; refused && len(st.body) != maxErrorBody {
				t.Errorf("kept %d bytes of the refused body, want %d", len(st.body), maxErrorBody)
			}
		})
	}
}

// TestRoundTripperLeavesTheSessionStream: the session's standalone event
// stream (GET, 200, text/event-stream) lives as long as the session, so its
// total is not capped; the SDK bounds each of its events instead.
func TestRoundTripperLeavesTheSessionStream(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	event := append(append([]byte("data: "), bytes.Repeat([]byte("x"), 1<<10)...), "\n\n"...)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 8 * limit / len(event) {
			w.Write(event)
		}
	}))
	t.Cleanup(hs.Close)
	rt := &roundTripper{base: hs.Client().Transport, target: &target{}, maxBytes: limit}
	req, _ := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodGet, hs.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(8*limit/len(event)*len(event)) {
		t.Fatalf("read %d bytes, err = %v; want the whole stream", n, err)
	}
}
