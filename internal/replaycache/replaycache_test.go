package replaycache

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
)

func fp(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestEncodeDecode(t *testing.T) {
	yes, no := true, false
	for _, ro := range []*bool{&yes, &no, nil} {
		e := &Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200, ContentType: "application/json",
			Body: []byte(`{"x":"<&>"}`), CallID: "c_1", ReadOnly: ro, ExpiresAt: 1234567890123}
		got, err := decode(encode(e))
		if err != nil || !bytes.Equal(got.Body, e.Body) || got.ExpiresAt != e.ExpiresAt || got.CallID != e.CallID || got.Status != 200 ||
			got.ContentType != e.ContentType || !sameBool(got.ReadOnly, ro) {
			t.Fatalf("round trip of read-only %v: %+v, %v", showBool(ro), got, err)
		}
		// An older build's layout has no read-only byte: not known.
		got, err = decodeLegacy(encodeLegacy(e))
		if err != nil || !bytes.Equal(got.Body, e.Body) || got.ExpiresAt != e.ExpiresAt || got.CallID != e.CallID || got.Status != 200 ||
			got.ContentType != e.ContentType || got.ReadOnly != nil {
			t.Fatalf("round trip of the older layout: %+v, %v", got, err)
		}
	}
	for _, short := range []string{"short", string(fp(1)) + "s", string(fp(1)) + "sr"} {
		if _, err := decode([]byte(short)); err == nil {
			t.Fatalf("a short value decoded: %q", short)
		}
		if _, err := decodeLegacy([]byte(short)); err == nil {
			t.Fatalf("a short value of the older layout decoded: %q", short)
		}
	}
	// A read-only byte this build does not know (a later build's) reads as
	// not known, not as a corrupt entry that would turn the cache off.
	later := encode(&Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200})
	later[33] = 'x'
	if e, err := decode(later); err != nil || e.ReadOnly != nil || e.Status != 200 {
		t.Fatalf("an unknown read-only byte: %+v, %v; want the entry, its flag not known", e, err)
	}
}

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func showBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// caches returns each Cache implementation, the Redis ones on the
// machine's Redis under a prefix of this test's own.
func caches(t *testing.T) map[string]Cache {
	rdb, err := ParseURL("redis://" + testdb.RedisAddr() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	prefix := fmt.Sprintf("quivertest:rc:%d:", time.Now().UnixNano())
	return map[string]Cache{
		"memory": NewMemory(),
		"redis":  NewRedis(rdb, prefix),
		"tiered": NewTiered(NewMemory(), NewRedis(rdb, prefix+"t:")),
	}
}

func TestCacheRules(t *testing.T) {
	ctx := context.Background()
	for name, c := range caches(t) {
		t.Run(name, func(t *testing.T) {
			r, err := c.Begin(ctx, 1, "k", fp(1), "tok1", time.Minute)
			if err != nil || !r.Locked {
				t.Fatalf("first Begin: %+v %v", r, err)
			}
			r, _ = c.Begin(ctx, 1, "k", fp(2), "tok2", time.Minute)
			if r.Locked || r.Entry != nil {
				t.Fatalf("second Begin: %+v", r)
			}
			if r, _ := c.Begin(ctx, 2, "k", fp(1), "tok3", time.Minute); !r.Locked {
				t.Fatal("keys of another account collided")
			}
			c.Unlock(ctx, 1, "k", "not-the-holder")
			if r, _ := c.Begin(ctx, 1, "k", fp(1), "tok4", time.Minute); r.Locked {
				t.Fatal("Unlock by a non-holder dropped the lock")
			}
			e := &Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200, ContentType: "application/json", Body: []byte("{}\n"), CallID: "c"}
			if err := c.Finish(ctx, 1, "k", e, time.Minute); err != nil {
				t.Fatal(err)
			}
			r, _ = c.Begin(ctx, 1, "k", fp(9), "tok5", time.Minute)
			if r.Entry == nil || !bytes.Equal(r.Entry.Body, e.Body) || r.Entry.CallID != "c" || r.Entry.ReadOnly != nil {
				t.Fatalf("after Finish: %+v", r)
			}
			// Whether the action was read-only travels with the outcome.
			for i, ro := range []bool{true, false} {
				key := fmt.Sprint("ro-", i)
				if err := c.Finish(ctx, 1, key, &Entry{Fingerprint: fp(1), State: StateOutcomeUnknown, ReadOnly: &ro}, time.Minute); err != nil {
					t.Fatal(err)
				}
				if r, _ := c.Begin(ctx, 1, key, fp(1), "tok", time.Minute); r.Entry == nil || r.Entry.ReadOnly == nil || *r.Entry.ReadOnly != ro {
					t.Fatalf("read-only %v after Finish: %+v", ro, r.Entry)
				}
			}
			// An outcome expires with its key.
			c.Finish(ctx, 1, "short", &Entry{Fingerprint: fp(1), State: StateOutcomeUnknown}, 50*time.Millisecond)
			time.Sleep(100 * time.Millisecond)
			if r, _ := c.Begin(ctx, 1, "short", fp(1), "tok6", time.Minute); r.Entry != nil {
				t.Fatalf("expired outcome still served: %+v", r.Entry)
			}
		})
	}
}

func TestMemoryBounds(t *testing.T) {
	m := NewMemory()
	body := bytes.Repeat([]byte("a"), MaxBody)
	for i := 0; i < MaxBytes/MaxBody+10; i++ {
		m.Put(1, fmt.Sprint(i), &Entry{Fingerprint: fp(1), Body: body}, time.Now().Add(time.Hour))
	}
	if m.bytes > MaxBytes {
		t.Fatalf("memory holds %d bytes, over %d", m.bytes, MaxBytes)
	}
	m.Put(1, "huge", &Entry{Fingerprint: fp(1), Body: make([]byte, MaxBody+1)}, time.Now().Add(time.Hour))
	if m.Get(1, "huge") != nil {
		t.Fatal("a body over MaxBody was kept")
	}
}

func TestTieredServesFromMemoryAfterRedisLosesIt(t *testing.T) {
	ctx := context.Background()
	near := NewMemory()
	far := NewMemory() // stands in for Redis: what matters is that it forgets
	c := NewTiered(near, far)
	c.Begin(ctx, 1, "k", fp(1), "t", time.Minute)
	c.Finish(ctx, 1, "k", &Entry{Fingerprint: fp(1), State: StateSucceeded, Body: []byte("x")}, time.Minute)
	far.dropLocked(memKey{1, "k"})
	if r, _ := c.Begin(ctx, 1, "k", fp(1), "t2", time.Minute); r.Entry == nil {
		t.Fatal("the near copy was not used")
	}
}

func TestParseURLSchemes(t *testing.T) {
	cases := map[string]string{
		"redis://127.0.0.1:6379/0":  "*redis.Client",
		"rediss://127.0.0.1:6380/1": "*redis.Client",
		"redis-sentinel://127.0.0.1:26379?master_name=main&addr=127.0.0.1:26380": "*redis.Client",
		"redis-cluster://127.0.0.1:7000?addr=127.0.0.1:7001":                     "*redis.ClusterClient",
	}
	for raw, want := range cases {
		c, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got := fmt.Sprintf("%T", c); got != want {
			t.Errorf("%s: client %s, want %s", raw, got, want)
		}
		c.Close()
	}
	if _, err := ParseURL("redis-sentinel://127.0.0.1:26379?bogus=1"); err == nil {
		t.Error("an unknown parameter was accepted")
	}
}

// An outcome an older build put in Redis, in its own layout under its own
// name, is read, as not known to be read-only; one this build wrote wins.
func TestRedisReadsAnOlderBuildsOutcome(t *testing.T) {
	ctx := context.Background()
	rdb, err := ParseURL("redis://" + testdb.RedisAddr() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c := NewRedis(rdb, fmt.Sprintf("quivertest:rc:%d:", time.Now().UnixNano()))
	old := &Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200, ContentType: "application/json", Body: []byte("{}"), CallID: "c_old",
		ExpiresAt: time.Now().Add(time.Minute).UnixMilli()}
	_, legacy, _ := c.names(1, "k")
	if err := rdb.Set(ctx, legacy, encodeLegacy(old), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Begin(ctx, 1, "k", fp(1), "tok", time.Minute)
	if err != nil || r.Locked || r.Entry == nil || r.Entry.CallID != "c_old" || string(r.Entry.Body) != "{}" || r.Entry.ReadOnly != nil {
		t.Fatalf("the older build's outcome: %+v, %v", r, err)
	}
	no := false
	if err := c.Finish(ctx, 1, "k", &Entry{Fingerprint: fp(1), State: StateSucceeded, Status: 200, Body: []byte("{}"), CallID: "c_old", ReadOnly: &no}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Begin(ctx, 1, "k", fp(1), "tok", time.Minute); err != nil || r.Entry == nil || r.Entry.ReadOnly == nil || *r.Entry.ReadOnly {
		t.Fatalf("after this build's Finish: %+v, %v", r.Entry, err)
	}
}

// encodeLegacy is encode without the read-only byte: the layout of the
// builds before it, which they still write: for tests of reading it.
func encodeLegacy(e *Entry) []byte {
	b := make([]byte, 0, 46+len(e.ContentType)+len(e.CallID)+len(e.Body))
	b = append(b, e.Fingerprint...)
	return appendRest(append(b, e.State), e)
}
