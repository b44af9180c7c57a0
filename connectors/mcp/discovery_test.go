package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

func actionsByName(t *testing.T, actions []connectors.Action) map[string]connectors.Action {
	t.Helper()
	m := map[string]connectors.Action{}
	for _, a := range actions {
		if _, dup := m[a.Name]; dup {
			t.Errorf("action %s listed twice", a.Name)
		}
		m[a.Name] = a
	}
	return m
}

func TestActionsAllPages(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			t.Parallel()
			srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: stateless, PageSize: 4})
			c := setup(t, nil)
			actions, err := c.Actions(ctxFor(t, 10*time.Second), toolFor(srv, 1, nil))
			if err != nil {
				t.Fatal(err)
			}
			m := actionsByName(t, actions)
			want := mcptest.CounterTools // 22 tools at 4 a page: 6 pages
			if len(m) != want {
				t.Fatalf("got %d actions, want %d", len(m), want)
			}
			for _, name := range []string{"increment", "read_count", "slow", "drop_after_act", "fail", "dummy_00", "dummy_11"} {
				if _, ok := m[name]; !ok {
					t.Errorf("action %s missing", name)
				}
			}
			if got := srv.Initializes(); got != 1 {
				t.Errorf("initializes = %d, want 1", got)
			}
		})
	}
}

func TestActionsRetryableFromAnnotations(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Mail, mcptest.Options{})
	c := setup(t, nil)
	actions, err := c.Actions(ctxFor(t, 10*time.Second), toolFor(srv, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := actionsByName(t, actions)
	retryable := map[string]bool{
		"get_upcoming_travel": true, "order_status": true, "bills_due": true, "ask": true, "get_excerpt": true,
		"create_draft": false, "draft_reply": false, "send_draft": false,
	}
	if len(m) != len(retryable) {
		t.Errorf("got %d actions, want %d", len(m), len(retryable))
	}
	for name, want := range retryable {
		a, ok := m[name]
		if !ok {
			t.Errorf("action %s missing", name)
			continue
		}
		if a.Retryable != want {
			t.Errorf("%s: retryable = %v, want %v", name, a.Retryable, want)
		}
		if a.Annotations == nil || a.Annotations.ReadOnlyHint == nil || *a.Annotations.ReadOnlyHint != want {
			t.Errorf("%s: annotations = %+v", name, a.Annotations)
		}
		var schema map[string]any
		if err := json.Unmarshal(a.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: input schema = %s", name, a.InputSchema)
		}
	}
	if d := m["send_draft"].Annotations.DestructiveHint; d == nil || !*d {
		t.Errorf("send_draft: destructiveHint = %v, want true", d)
	}
	if d := m["create_draft"].Annotations.DestructiveHint; d != nil {
		t.Errorf("create_draft: destructiveHint = %v, want absent", *d)
	}
	if s := string(m["order_status"].InputSchema); s != `{"properties":{"merchant":{"type":"string"}},"required":["merchant"],"type":"object"}` {
		t.Errorf("order_status schema = %s", s)
	}

	// Inbox: cancel_send is idempotent, so retryable without being read-only.
	inbox := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
	actions, err = c.Actions(ctxFor(t, 10*time.Second), toolFor(inbox, 2, map[string]string{"bearer_token": mcptest.InboxKey}))
	if err != nil {
		t.Fatal(err)
	}
	m = actionsByName(t, actions)
	if !m["cancel_send"].Retryable || m["send_reply"].Retryable || !m["list_businesses"].Retryable {
		t.Errorf("inbox retryable: cancel_send=%v send_reply=%v list_businesses=%v",
			m["cancel_send"].Retryable, m["send_reply"].Retryable, m["list_businesses"].Retryable)
	}
}

func TestActionsCachedAndInvalidated(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{PageSize: 100}, nil)
	ctx := ctxFor(t, 10*time.Second)

	first, err := c.Actions(ctx, tool)
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Requests()
	if _, err := c.Actions(ctx, tool); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests(); got != before {
		t.Errorf("cached Actions made %d requests", got-before)
	}

	// The server's tools/list_changed notice drops the cache.
	srv.AddTool("added_later")
	if !eventually(t, 5*time.Second, func() bool {
		actions, err := c.Actions(ctx, tool)
		return err == nil && len(actions) == len(first)+1
	}) {
		t.Fatal("a new tool never showed up after tools/list_changed")
	}

	// A new Version is discovered afresh.
	tool2 := *tool
	tool2.Version = 2
	before = srv.Requests()
	if _, err := c.Actions(ctx, &tool2); err != nil {
		t.Fatal(err)
	}
	if srv.Requests() == before {
		t.Error("a new version was served from the cache")
	}
}

func TestActionsTTL(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{Stateless: true, PageSize: 100}, &Options{AllowPrivate: true, DiscoveryTTL: 50 * time.Millisecond})
	ctx := ctxFor(t, 10*time.Second)
	if _, err := c.Actions(ctx, tool); err != nil {
		t.Fatal(err)
	}
	before := srv.Requests()
	if !eventually(t, 2*time.Second, func() bool {
		_, err := c.Actions(ctx, tool)
		return err == nil && srv.Requests() > before
	}) {
		t.Error("actions were never listed again after the TTL")
	}
}

func TestActionsUpstreamAuth(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
	c := setup(t, nil)
	_, err := c.Actions(ctxFor(t, 10*time.Second), toolFor(srv, 1, nil))
	wantKind(t, err, connectors.KindUpstreamAuth)
}

// A name listed twice becomes one action, as safe as the least safe of its
// copies: before, the first listed won, so a destructive copy listed after a
// read-only one could be called without a key, and with a read-only key.
func TestActionsDuplicateNamesTakeTheLeastSafe(t *testing.T) {
	t.Parallel()
	readOnly := &mcp.Tool{Name: "dup", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	destructive := &mcp.Tool{Name: "dup", InputSchema: map[string]any{"type": "object"}}
	for _, order := range [][]*mcp.Tool{{readOnly, destructive}, {destructive, readOnly}} {
		actions := toActions(order)
		if len(actions) != 1 {
			t.Fatalf("%d actions, want 1", len(actions))
		}
		a := actions[0]
		if a.Retryable || (a.Annotations != nil && a.Annotations.ReadOnlyHint != nil && *a.Annotations.ReadOnlyHint) {
			t.Errorf("first %v: retryable %v, annotations %+v; want neither retryable nor read-only", order[0].Annotations != nil, a.Retryable, a.Annotations)
		}
	}
	both := toActions([]*mcp.Tool{readOnly, readOnly})
	if len(both) != 1 || !both[0].Retryable {
		t.Errorf("two read-only copies: %+v", both)
	}
}

// pagedServer answers tools/list with pageSize tools a page, of total (or
// without end when total is negative), in hand-written JSON, each with a
// description of desc bytes.
func pagedServer(t *testing.T, total, pageSize, desc int) *httptest.Server {
	return interceptedServer(t, func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		from, _ := strconv.Atoi(req.Params.Cursor)
		var tools []string
		for i := from; i < from+pageSize && (total < 0 || i < total); i++ {
			tools = append(tools, fmt.Sprintf(`{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}`, i, strings.Repeat("d", desc)))
		}
		next := ""
		if total < 0 || from+pageSize < total {
			next = strconv.Itoa(from + pageSize)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s],"nextCursor":%q}}`, req.ID, strings.Join(tools, ","), next)
	})
}

// TestActionsEveryPageOrNone: a long tool list is read to its end (it was
// cut at 100 pages, so the tools past them answered not_found), and one
// that never ends is refused rather than cut short.
func TestActionsEveryPageOrNone(t *testing.T) {
	t.Parallel()
	long := pagedServer(t, 1205, 5, 0) // 241 pages
	endless := pagedServer(t, -1, 100, 0)
	heavy := pagedServer(t, 60, 10, 4<<10)                                                                      // 60 tools of 4 KiB: over 2 × 64 KiB
	c := setup(t, &Options{AllowPrivate: true, DiscoveryTimeout: 30 * time.Second, MaxResponseBytes: 64 << 10}) // closed before the servers
	actions, err := c.Actions(ctxFor(t, 30*time.Second), &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry,
		Config: map[string]string{"url": long.URL + "/mcp"}, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m := actionsByName(t, actions); len(m) != 1205 || m["t1204"].Name == "" {
		t.Fatalf("%d actions, want all 1205 (t1204 among them)", len(m))
	}

	_, err = c.Actions(ctxFor(t, 30*time.Second), &connectors.Tool{ID: 2, AccountID: 1, Entry: customEntry,
		Config: map[string]string{"url": endless.URL + "/mcp"}, Version: 1})
	wantKind(t, err, connectors.KindUnreachable)
	if err == nil || !strings.Contains(err.Error(), "lists more tools than Quiver takes") {
		t.Fatalf("err = %v, want the list refused as too long", err)
	}
	wantField(t, c.Verify(ctxFor(t, 30*time.Second), customEntry, map[string]string{"url": endless.URL + "/mcp"}), "url",
		"lists more tools than Quiver takes (10000 tools, 2000 pages or 128 KiB of them).")

	_, err = c.Actions(ctxFor(t, 30*time.Second), &connectors.Tool{ID: 3, AccountID: 1, Entry: customEntry,
		Config: map[string]string{"url": heavy.URL + "/mcp"}, Version: 1})
	if err == nil || !strings.Contains(err.Error(), "lists more tools than Quiver takes") {
		t.Fatalf("err = %v, want the heavy list refused", err)
	}
}
