package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReadsAfterTheConnectionsWereCut: every connection to Postgres cut
// with no word from it (a network failure, a failover that moved its
// address), and the database reachable again at once: the first reads
// after it (readiness, a tool, a list) answer 200 through the API, not one
// 503 each while the database is up.
func TestReadsAfterTheConnectionsWereCut(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "conncut")
	e := setupCalls(t, testserver.Options{DatabaseURL: dbURL})
	reads := []string{"/readyz", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id), "/api/v1/agents/custom-tools/"}
	for _, path := range reads {
		if r := e.srv.Do("GET", path, nil); r.Status != 200 {
			t.Fatalf("GET %s before the cut: %d %s", path, r.Status, r.Body)
		}
		px.setCut(true)  // every connection in the pool is dead…
		px.setCut(false) // …and the database is there for new ones
		if r := e.srv.Do("GET", path, nil); r.Status != 200 {
			t.Fatalf("GET %s first after the connections were cut: %d %s", path, r.Status, r.Body)
		}
	}
}
