package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/agents"
)

// panickyAgents panics on its first Get, as a bug in a build would, and
// then answers as f does.
type panickyAgents struct {
	f     *fakes
	calls atomic.Int32
}

func (p *panickyAgents) Get(ctx context.Context, account, id int64) (*agents.Agent, error) {
	if p.calls.Add(1) == 1 {
		panic("a bug in the build")
	}
	return p.f.Get(ctx, account, id)
}

// TestMCPBuildPanicEndsTheBuild: a build of an agent's list that panics
// fails its own request, and the next request builds anew. It used to
// leave the build unfinished, so every later request to the agent waited
// for it until its own context ended.
func TestMCPBuildPanicEndsTheBuild(t *testing.T) {
	f, _ := setup(t)
	gin.SetMode(gin.ReleaseMode)
	s := New(Options{Agents: &panickyAgents{f: f}, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Minute})
	r := gin.New()
	r.Use(gin.CustomRecovery(func(c *gin.Context, _ any) { c.AbortWithStatus(http.StatusInternalServerError) }))
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	url := hs.URL + "/api/v1/agents/7/mcp"
	for i, want := range []int{http.StatusInternalServerError, http.StatusOK} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != want {
			t.Errorf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
}
