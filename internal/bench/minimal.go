package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// minimalHandler is the floor a first call cannot go below on this
// machine: a hand-written Redis SET NX, Postgres INSERT and UPDATE (two
// synchronous commits) and Redis SET, with pgx and go-redis and no tool
// call. It answers like the echo handler. Quiver's first call is quoted
// against it as well as against the echo.
func minimalHandler(ctx context.Context, dbURL, redisURL string) (http.Handler, func(), error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_minimal (k TEXT PRIMARY KEY, state TEXT NOT NULL, body BYTEA)`); err != nil {
		pool.Close()
		return nil, nil, err
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	rdb := redis.NewClient(opts)
	var seq atomic.Int64
	prefix := fmt.Sprintf("quiverbench:minimal:%p:", pool)
	r := gin.New()
	r.POST("/minimal", func(c *gin.Context) {
		b, _ := io.ReadAll(c.Request.Body)
		k := fmt.Sprint(seq.Add(1))
		ctx := c.Request.Context()
		if ok, err := rdb.SetNX(ctx, prefix+k, "l", 0).Result(); err != nil || !ok {
			c.Status(500)
			return
		}
		if _, err := pool.Exec(ctx, `INSERT INTO bench_minimal (k, state) VALUES ($1, 'dispatched') ON CONFLICT DO NOTHING`, k); err != nil {
			c.Status(500)
			return
		}
		if _, err := pool.Exec(ctx, `UPDATE bench_minimal SET state = 'succeeded', body = $2 WHERE k = $1 AND state = 'dispatched'`, k, b); err != nil {
			c.Status(500)
			return
		}
		rdb.Set(ctx, prefix+k, b, 0)
		c.Data(200, "application/json; charset=utf-8", b)
	})
	return r, func() {
		rdb.Close()
		pool.Close()
	}, nil
}
