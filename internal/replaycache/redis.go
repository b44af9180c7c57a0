package replaycache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps locks and outcomes in Redis, shared by every replica. Keys
// carry a hash tag so a key's lock and outcome share a Cluster slot.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedis returns a cache on rdb whose keys start with prefix.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix}
}

// LogTo sends go-redis's own messages (a pool that cannot dial, say) to
// logger as warnings, rather than as plain text on stderr among the JSON
// lines. go-redis has one logger per process.
func LogTo(logger *slog.Logger) { redis.SetLogger(redisLog{logger}) }

type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, fmt.Sprintf(format, v...), "from", "go-redis")
}

// ParseURL builds a client from a redis:// or rediss:// URL (one node),
// redis-sentinel:// (Sentinel; master_name and addr query parameters) or
// redis-cluster:// (Cluster; extra nodes as addr parameters).
func ParseURL(raw string) (redis.UniversalClient, error) {
	const (
		timeout     = 500 * time.Millisecond
		dialTimeout = time.Second
	)
	// A Redis failure degrades to Postgres: retries would only add latency,
	// and so would dialing again (go-redis dials five times by default).
	switch {
	case strings.HasPrefix(raw, "redis-sentinel://"):
		o, err := redis.ParseFailoverURL("redis://" + strings.TrimPrefix(raw, "redis-sentinel://"))
		if err != nil {
			return nil, err
		}
		o.ReadTimeout, o.WriteTimeout, o.DialTimeout, o.MaxRetries, o.DialerRetries = timeout, timeout, dialTimeout, -1, 1
		return redis.NewFailoverClient(o), nil
	case strings.HasPrefix(raw, "redis-cluster://"):
		o, err := redis.ParseClusterURL("redis://" + strings.TrimPrefix(raw, "redis-cluster://"))
		if err != nil {
			return nil, err
		}
		o.ReadTimeout, o.WriteTimeout, o.DialTimeout, o.MaxRetries, o.DialerRetries = timeout, timeout, dialTimeout, -1, 1
		return redis.NewClusterClient(o), nil
	default:
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, err
		}
		o.ReadTimeout, o.WriteTimeout, o.DialTimeout, o.MaxRetries, o.DialerRetries = timeout, timeout, dialTimeout, -1, 1
		o.PoolSize = 64
		return redis.NewClient(o), nil
	}
}

// RefusesSetup reports whether err is Redis refusing a connection's setup
// in a way that will not pass by waiting: the credentials (AUTH) or the
// database number (SELECT) in REDIS_URL. A Redis that is down, loading or
// failing over answers otherwise, and Quiver runs on without it meanwhile.
func RefusesSetup(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "ERR AUTH", "ERR invalid password", "ERR invalid username"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.Contains(msg, "DB index is out of range") || strings.HasPrefix(msg, "ERR invalid DB index")
}

// names are a key's three Redis keys: its outcome, the outcome as builds
// before the read-only byte wrote it (read, never written: an older build
// would misread the newer layout), and its lock.
func (r *Redis) names(account int64, key string) (outcome, legacy, lock string) {
	sum := sha256.Sum256([]byte(key))
	base := r.prefix + "idem:{" + strconv.FormatInt(account, 10) + ":" + hex.EncodeToString(sum[:16]) + "}"
	return base + ":o2", base + ":o", base + ":l"
}

// begin returns {1, outcome, ttl} on a hit, {4, outcome, ttl} on a hit of
// an older build's outcome (ttl: what Redis has left of it, in
// milliseconds), {2} when it took the lock, and {3} when another request
// holds it.
var begin = redis.NewScript(`
local o = redis.call('GET', KEYS[1])
if o then return {1, o, redis.call('PTTL', KEYS[1])} end
o = redis.call('GET', KEYS[2])
if o then return {4, o, redis.call('PTTL', KEYS[2])} end
if redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2, ''} end
return {3, ''}
`)

// Begin implements Cache.
func (r *Redis) Begin(ctx context.Context, account int64, key string, fingerprint []byte, token string, lease time.Duration) (BeginResult, error) {
	o, legacy, l := r.names(account, key)
	res, err := begin.Run(ctx, r.rdb, []string{o, legacy, l}, lockValue(fingerprint, token), lease.Milliseconds()).Slice()
	if err != nil {
		return BeginResult{}, err
	}
	if len(res) < 2 {
		return BeginResult{}, errCorrupt
	}
	code, _ := res[0].(int64)
	val, _ := res[1].(string)
	switch code {
	case 1, 4:
		dec := decode
		if code == 4 {
			dec = decodeLegacy
		}
		e, err := dec([]byte(val))
		if err != nil {
			return BeginResult{}, err
		}
		var ttl time.Duration
		if len(res) == 3 {
			if ms, _ := res[2].(int64); ms > 0 {
				ttl = time.Duration(ms) * time.Millisecond
			}
		}
		return BeginResult{Entry: e, TTL: ttl}, nil
	case 2:
		return BeginResult{Locked: true}, nil
	default: // another request holds the lock
		return BeginResult{}, nil
	}
}

// Finish implements Cache.
func (r *Redis) Finish(ctx context.Context, account int64, key string, e *Entry, ttl time.Duration) error {
	o, _, l := r.names(account, key)
	if e.ExpiresAt == 0 {
		e.ExpiresAt = time.Now().Add(ttl).UnixMilli()
	}
	// A plain pipeline: one round trip, in order. It need not be atomic:
	// Begin looks for the outcome before it looks at the lock.
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if len(e.Body) <= MaxBody && ttl > 0 {
			p.Set(ctx, o, encode(e), ttl)
		}
		p.Del(ctx, l)
		return nil
	})
	return err
}

// unlock deletes the lock only if it still holds token.
var unlock = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 33) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Unlock implements Cache.
func (r *Redis) Unlock(ctx context.Context, account int64, key, token string) error {
	_, _, l := r.names(account, key)
	return unlock.Run(ctx, r.rdb, []string{l}, token).Err()
}

// Ping implements Cache.
func (r *Redis) Ping(ctx context.Context) error { return r.rdb.Ping(ctx).Err() }
