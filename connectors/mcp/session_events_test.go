package mcp

import (
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// eventLog records Options.Events.
type eventLog struct {
	mu     sync.Mutex
	counts map[string]int // "opened", "failed", "retired:<reason>"
}

func (l *eventLog) add(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[what]++
}

func (l *eventLog) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}

// TestSessionEvents: the pool tells Options.Events of each session it
// opens, fails to open and retires, with the reason it retired it, and
// nothing per call (quiver_mcp_sessions_opened_total,
// quiver_mcp_session_failures_total, quiver_mcp_sessions_retired_total).
func TestSessionEvents(t *testing.T) {
	t.Parallel()
	log := &eventLog{counts: map[string]int{}}
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := setup(t, &Options{AllowPrivate: true, Events: SessionEvents{
		Opened:  func() { log.add("opened") },
		Failed:  func() { log.add("failed") },
		Retired: func(reason string) { log.add("retired:" + reason) },
	}})
	want := map[string]int{}
	step := func(what string, do func(), delta map[string]int) {
		t.Helper()
		do()
		for k, v := range delta {
			want[k] += v
		}
		if got := log.snapshot(); !maps.Equal(got, want) {
			t.Fatalf("after %s: events %v, want %v", what, got, want)
		}
	}
	v1 := toolFor(srv, 1, nil)
	step("ten calls", func() {
		for range 10 {
			mustCall(t, c, v1, "increment", `{}`)
		}
	}, map[string]int{"opened": 1})
	v2 := toolFor(srv, 1, nil)
	v2.Version = 2
	step("a call with a new version", func() { mustCall(t, c, v2, "increment", `{}`) },
		map[string]int{"opened": 1, "retired:reconfigured": 1})
	step("a call after the server forgot the session", func() {
		srv.ForgetSessions()
		mustCall(t, c, v2, "increment", `{}`)
	}, map[string]int{"opened": 1, "retired:ended": 1})
	dead := &connectors.Tool{ID: 2, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": closedURL(t)}, Version: 1}
	step("a call to a server that is not there", func() {
		if _, err := call(t, c, dead, "increment", `{}`); err == nil {
			t.Fatal("a call to a closed port succeeded")
		}
	}, map[string]int{"failed": 1})
	step("closing the connector", func() { c.Close() }, map[string]int{"retired:closed": 1})
}

// TestRetireReasonsKnown: every reason the package retires a session for
// is one retireReason knows, so the metric's reason label keeps its fixed
// set (RetireReasons).
func TestRetireReasonsKnown(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\.(?:retire|retireLocked|lost)\(.*, "([^"]+)"\)`)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
	}
	if len(seen) < 6 {
		t.Fatalf("found only the retire reasons %v: the pattern no longer matches the callers", seen)
	}
	for reason := range seen {
		label, ok := retireReason(reason)
		if !ok || !strings.Contains(" "+strings.Join(RetireReasons, " ")+" ", " "+label+" ") {
			t.Errorf("the retire reason %q has no RetireReasons label (%q, %t)", reason, label, ok)
		}
	}
}

// TestSessionRetiredWhileConnecting: a session retired before its handshake
// ended (a newer configuration came meanwhile) is counted as retired once it
// opens, and not at all when it never does: it is then a failure alone, so
// opened minus retired still counts live sessions.
func TestSessionRetiredWhileConnecting(t *testing.T) {
	t.Parallel()
	for _, opens := range []bool{true, false} {
		log := &eventLog{counts: map[string]int{}}
		arrived, answer := make(chan struct{}, 8), make(chan struct{})
		slow := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
					arrived <- struct{}{}
					<-answer // initialize waits for the test
					if !opens {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
				}
				next.ServeHTTP(w, r)
			})
		}})
		c := setup(t, &Options{AllowPrivate: true, Events: SessionEvents{
			Opened:  func() { log.add("opened") },
			Failed:  func() { log.add("failed") },
			Retired: func(reason string) { log.add("retired:" + reason) },
		}})
		v1 := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": slow.URL}, Version: 1}
		v2 := *v1
		v2.Version = 2
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = call(t, c, v1, "increment", `{}`) }()
		<-arrived
		go func() { defer wg.Done(); _, _ = call(t, c, &v2, "increment", `{}`) }()
		<-arrived // v2's handshake began, after it retired v1's slot
		close(answer)
		wg.Wait()
		c.Close()
		want := map[string]int{"opened": 2, "retired:reconfigured": 1, "retired:closed": 1}
		if !opens {
			want = map[string]int{"failed": 2}
		}
		if got := log.snapshot(); !maps.Equal(got, want) {
			t.Errorf("handshakes that open %t: events %v, want %v", opens, got, want)
		}
	}
}
