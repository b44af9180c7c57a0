package replaycache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
)

// A near copy of an outcome read from Redis lives no longer than Redis
// keeps the outcome, whatever the clock of the replica that wrote it said:
// an entry's ExpiresAt is on the writer's clock. Before, a writer whose
// clock ran an hour ahead gave every other replica's copy an hour past the
// key's TTL, and they replayed the old outcome of a key that was new again.
func TestTieredNearCopyIgnoresTheWritersClock(t *testing.T) {
	ctx := context.Background()
	rdb, err := ParseURL("redis://" + testdb.RedisAddr() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	prefix := fmt.Sprintf("quivertest:rc:%d:", time.Now().UnixNano())
	const ttl = time.Minute
	// The writer, an hour ahead, puts the outcome with the key's TTL.
	writer := NewRedis(rdb, prefix)
	ahead := time.Now().Add(time.Hour)
	e := &Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200, ContentType: "application/json", Body: []byte(`{"n":1}`),
		CallID: "c_1", ExpiresAt: ahead.Add(ttl).UnixMilli()}
	if err := writer.Finish(ctx, 1, "k", e, ttl); err != nil {
		t.Fatal(err)
	}

	near := NewMemory()
	clock := time.Now()
	near.now = func() time.Time { return clock }
	reader := NewTiered(near, NewRedis(rdb, prefix))
	if r, err := reader.Begin(ctx, 1, "k", fp(1), "tok", time.Minute); err != nil || r.Entry == nil {
		t.Fatalf("first read: %+v, %v", r, err)
	}
	if near.Get(1, "k") == nil {
		t.Fatal("no near copy kept")
	}
	clock = clock.Add(ttl + time.Second) // Redis has dropped the outcome by now
	if got := near.Get(1, "k"); got != nil {
		t.Fatalf("the near copy outlived the key's TTL by the writer's clock: %+v", got)
	}
}
