// Package calls is the call engine behind POST /api/v1/agents/custom-tools/call/:
// it runs a tool action at most once per caller-owned Idempotency-Key and
// replays the stored outcome to every retry, across crashes, concurrent
// retries and replicas.
//
// A call, in order (DESIGN.md, "A call, end to end"):
//
//	parse ─▶ look up (cache) ─▶ resolve & check ─▶ reserve (DB) ─▶ dispatch ─▶ record
//	           │ hit: replay / 409     │ 4xx: key stays free   │ taken: answer from the row
//
// The database row, unique on (account, key), is the arbiter; the replay
// cache (Redis or in process) only answers faster and holds a short lock so
// concurrent duplicates wait without touching the database. Every error of
// the cache degrades to the database alone, never to a second run. The
// engine never speaks HTTP: it returns a Response or a *problem.Error.
package calls

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// MaxResult is the largest result stored and replayed; a larger one becomes
// a result_too_large error result.
const MaxResult = 8 << 20

// ContentType of every call response.
const ContentType = "application/json; charset=utf-8"

// Store is the persistence the engine needs.
type Store interface {
	Reserve(ctx context.Context, r *store.IdemRecord, lease, ttl time.Duration) (*store.IdemRecord, error)
	GetIdem(ctx context.Context, accountID int64, key string) (*store.IdemRecord, error)
	Complete(ctx context.Context, accountID int64, key, leaseToken string, status int, contentType string, body []byte) (bool, error)
	MarkUnknown(ctx context.Context, accountID int64, key, leaseToken string) (bool, error)
	Release(ctx context.Context, accountID int64, key, leaseToken string) (bool, error)
	SweepExpiredLeases(ctx context.Context) ([]store.SweptKey, error)
	PurgeExpiredKeys(ctx context.Context) (int64, error)
	InsertCalls(ctx context.Context, cs []store.CallLog) error
	ListCalls(ctx context.Context, accountID int64, toolID *int64, p store.Page) ([]store.CallLog, string, error)
}

var _ Store = (*store.Store)(nil)

// Tools resolves connected tools; *toolconfig.Service implements it.
type Tools interface {
	Resolve(ctx context.Context, accountID, id int64) (*toolconfig.Resolved, error)
	ResolveName(ctx context.Context, accountID int64, name string) (int64, error)
}

// Options configures an Engine.
type Options struct {
	Store          Store
	Tools          Tools
	Cache          replaycache.Cache
	Metrics        *metrics.Metrics
	Logger         *slog.Logger
	CallTimeout    time.Duration
	Lease          time.Duration // CallTimeout plus grace
	IdempotencyTTL time.Duration
	SweepInterval  time.Duration
	// Reauth refreshes a refused OAuth token for one retry; nil: no retry.
	Reauth Reauthorizer
}

// Engine runs calls.
type Engine struct {
	opts Options
	// cacheDownUntil (unix nanoseconds) skips the replay cache for a moment
	// after it failed, so a dead Redis costs one timeout, not one per call.
	cacheDownUntil atomic.Int64
	log            *callLog
	schemas        sync.Map // schema text → *compiledSchema
}

// New returns an Engine. Start its background work with Run.
func New(opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	e := &Engine{opts: opts}
	e.log = newCallLog(opts.Store, opts.Logger, opts.Metrics)
	return e
}

// Request is one call as received.
type Request struct {
	AccountID int64
	Body      []byte
	// Key is the Idempotency-Key; HasKey tells an absent header from "".
	Key    string
	HasKey bool
}

// Response is a call's answer: the exact bytes to send.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	Replayed    bool
}

// body is the call request's JSON.
type body struct {
	Tool      json.RawMessage `json:"tool"`
	Action    string          `json:"action"`
	Arguments json.RawMessage `json:"arguments"`
}

// Call runs one call. Errors are *problem.Error for every answer that is not
// a 200; any other error is a bug or an unavailable database.
func (e *Engine) Call(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	canon, err := Canonical(req.Body)
	if err != nil {
		return nil, &problem.Error{Code: problem.InvalidJSON, Message: "The request body is not valid JSON: " + err.Error() + ".", Err: err}
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, problem.New(problem.InvalidJSON, "The request body must be a JSON object.")
	}
	var b body
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return nil, problem.Validation("The request body has fields of the wrong type.", map[string]string{"body": err.Error()})
	}
	c := &call{e: e, req: req, b: b, fp: Fingerprint(canon), start: start}
	if req.HasKey {
		c.token = newToken()
		if resp, err, done := c.lookup(ctx); done {
			return resp, err
		}
	}
	resp, err := c.run(ctx)
	if c.locked {
		e.cacheDo(func(ctx context.Context) error { return e.opts.Cache.Unlock(ctx, req.AccountID, req.Key, c.token) })
	}
	return resp, err
}

// call is the state of one Call.
type call struct {
	e      *Engine
	req    Request
	b      body
	fp     []byte
	token  string
	locked bool // this call holds the cache lock
	start  time.Time
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lookup asks the replay cache; done means it answered.
func (c *call) lookup(ctx context.Context) (*Response, error, bool) {
	e := c.e
	if e.opts.Cache == nil || time.Now().UnixNano() < e.cacheDownUntil.Load() {
		return nil, nil, false
	}
	res, err := e.opts.Cache.Begin(ctx, c.req.AccountID, c.req.Key, c.fp, c.token, e.opts.Lease)
	if err != nil {
		e.cacheFailed(err)
		return nil, nil, false
	}
	switch {
	case res.Entry != nil:
		resp, err := c.fromEntry(res.Entry)
		return resp, err, true
	case res.Locked:
		c.locked = true
		return nil, nil, false
	case res.HolderFingerprint != nil:
		if !bytes.Equal(res.HolderFingerprint, c.fp) {
			return nil, c.conflict(problem.IdempotencyKeyReused), true
		}
		return nil, c.conflict(problem.RequestInProgress), true
	}
	return nil, nil, false
}

// fromEntry answers from a cached terminal outcome.
func (c *call) fromEntry(en *replaycache.Entry) (*Response, error) {
	if !bytes.Equal(en.Fingerprint, c.fp) {
		return nil, c.conflict(problem.IdempotencyKeyReused)
	}
	if en.State == replaycache.StateOutcomeUnknown {
		return nil, c.conflict(problem.OutcomeUnknownConflict)
	}
	return c.replay(en.Status, en.ContentType, en.Body), nil
}

func (c *call) replay(status int, contentType string, b []byte) *Response {
	c.e.opts.Metrics.Replays.Inc()
	c.e.opts.Metrics.CallDuration.WithLabelValues("replay").Observe(time.Since(c.start).Seconds())
	return &Response{Status: status, ContentType: contentType, Body: b, Replayed: true}
}

// conflict returns the 409 for a key in use.
func (c *call) conflict(code problem.Code) *problem.Error {
	c.e.opts.Metrics.Conflicts.WithLabelValues(string(code)).Inc()
	switch code {
	case problem.IdempotencyKeyReused:
		return problem.New(code, "This Idempotency-Key was already used with a different request body.")
	case problem.RequestInProgress:
		p := problem.New(code, "A request with this Idempotency-Key is still running; retry after a moment.")
		p.RetryAfter = 1
		return p
	default:
		return problem.New(code, "The earlier request with this Idempotency-Key was dispatched and its outcome is unknown; it will not be run again. Check the tool, then use a new key for a new operation.")
	}
}

// fromRow answers from the database row that holds the key.
func (c *call) fromRow(r *store.IdemRecord) (*Response, error) {
	if !bytes.Equal(r.Fingerprint, c.fp) {
		return nil, c.conflict(problem.IdempotencyKeyReused)
	}
	switch {
	case r.State == store.IdemSucceeded:
		ct := ContentType
		if r.ContentType != nil {
			ct = *r.ContentType
		}
		status := 200
		if r.StatusCode != nil {
			status = *r.StatusCode
		}
		c.cacheOutcome(r.CallID, replaycache.StateSucceeded, status, ct, r.Response, rowTTL(r))
		return c.replay(status, ct, r.Response), nil
	case r.State == store.IdemOutcomeUnknown || r.LeaseExpired():
		c.cacheOutcome(r.CallID, replaycache.StateOutcomeUnknown, 0, "", nil, rowTTL(r))
		return nil, c.conflict(problem.OutcomeUnknownConflict)
	default:
		return nil, c.conflict(problem.RequestInProgress)
	}
}

// rowTTL is how long the key of a row read from the database has left.
func rowTTL(r *store.IdemRecord) time.Duration {
	return time.Duration(r.ExpiresAt-r.NowMS) * time.Millisecond
}

// freshTTL is how long a key this call reserved has left: the row's TTL
// began a moment after the call started, so this errs on the short side.
func (c *call) freshTTL() time.Duration { return c.e.opts.IdempotencyTTL - time.Since(c.start) }

// cacheOutcome puts a terminal outcome in the replay cache for the rest of
// its key's life (best effort).
func (c *call) cacheOutcome(callID string, state byte, status int, ct string, b []byte, ttl time.Duration) {
	e := c.e
	if e.opts.Cache == nil || ttl <= 0 {
		return
	}
	en := &replaycache.Entry{Fingerprint: c.fp, State: state, Status: status, ContentType: ct, Body: b, CallID: callID,
		ExpiresAt: time.Now().Add(ttl).UnixMilli()}
	e.cacheDo(func(ctx context.Context) error { return e.opts.Cache.Finish(ctx, c.req.AccountID, c.req.Key, en, ttl) })
	c.locked = false
}

// cacheDo runs a cache write on a context of its own: it must happen even
// if the client left, and must not hold the answer up for long.
func (e *Engine) cacheDo(fn func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := fn(ctx); err != nil {
		e.cacheFailed(err)
	}
}

// cacheBackoff is how long the replay cache is skipped after an error.
const cacheBackoff = time.Second

// cacheFailed records a cache error and skips the cache for cacheBackoff:
// calls go to the database alone meanwhile, which is slower, never weaker.
func (e *Engine) cacheFailed(err error) {
	e.opts.Metrics.CacheErrors.Inc()
	now := time.Now().UnixNano()
	if prev := e.cacheDownUntil.Load(); now >= prev && e.cacheDownUntil.CompareAndSwap(prev, now+int64(cacheBackoff)) {
		e.opts.Logger.Warn("replay cache unavailable; using the database alone for a moment", "error", err)
	}
}

// rejectBeforeReserve answers a check that failed before anything was
// reserved: the key stays free, unless the database already holds an
// outcome for it (the cache may have lost it), which must replay.
func (c *call) rejectBeforeReserve(ctx context.Context, rejection error) (*Response, error) {
	if !c.req.HasKey {
		return nil, rejection
	}
	r, err := c.e.opts.Store.GetIdem(ctx, c.req.AccountID, c.req.Key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, rejection
	case err != nil:
		return nil, unavailable(err)
	case r.ExpiresAt <= r.NowMS && !(r.State == store.IdemDispatched && !r.LeaseExpired()):
		return nil, rejection // past its TTL: the key is new again
	}
	return c.fromRow(r)
}

func unavailable(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return &problem.Error{Code: problem.Unavailable, Message: "The database is unavailable; nothing was run. Retry shortly.", Err: err, RetryAfter: 1}
	}
	return err
}

// target resolves the tool named by the body.
func (c *call) target(ctx context.Context) (*toolconfig.Resolved, *connectors.Action, error) {
	e := c.e
	var id int64
	var name string
	switch {
	case len(c.b.Tool) == 0 || string(c.b.Tool) == "null":
		return nil, nil, problem.Validation("The call names no tool.", map[string]string{"tool": "is required: the tool's integer ID or catalog name"})
	case json.Unmarshal(c.b.Tool, &id) == nil:
	case json.Unmarshal(c.b.Tool, &name) == nil && name != "":
		var err error
		if id, err = e.opts.Tools.ResolveName(ctx, c.req.AccountID, name); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, problem.Validation("The tool must be an integer ID or a catalog name.", map[string]string{"tool": "must be an integer ID or a catalog name"})
	}
	if c.b.Action == "" {
		return nil, nil, problem.Validation("The call names no action.", map[string]string{"action": "is required"})
	}
	rt, err := e.opts.Tools.Resolve(ctx, c.req.AccountID, id)
	if err != nil {
		return nil, nil, err
	}
	actions, err := rt.Connector.Actions(ctx, rt.Tool)
	if err != nil {
		return nil, nil, connectorProblem(err)
	}
	for i := range actions {
		if actions[i].Name == c.b.Action {
			return rt, &actions[i], nil
		}
	}
	return nil, nil, problem.New(problem.NotFound, "Tool %d has no action %q.", id, c.b.Action)
}

// run resolves, checks, reserves, dispatches and records.
func (c *call) run(ctx context.Context) (*Response, error) {
	e := c.e
	rt, action, err := c.target(ctx)
	if err == nil && !action.Retryable && !c.req.HasKey {
		err = problem.New(problem.IdempotencyKeyRequired, "Action %q is not retryable: call it with an Idempotency-Key header.", action.Name)
	}
	if err == nil {
		err = e.checkArguments(action, c.b.Arguments)
	}
	if err != nil {
		return c.rejectBeforeReserve(ctx, unavailable(err))
	}
	callID := "c_" + ulid.Make().String()
	if c.req.HasKey {
		rec := &store.IdemRecord{AccountID: c.req.AccountID, Key: c.req.Key, Fingerprint: c.fp, LeaseToken: &c.token,
			ToolID: rt.Tool.ID, Action: action.Name, CallID: callID}
		existing, err := e.opts.Store.Reserve(ctx, rec, e.opts.Lease, e.opts.IdempotencyTTL)
		if err != nil {
			return nil, unavailable(err)
		}
		if existing != nil {
			return c.fromRow(existing)
		}
	}
	return c.dispatch(ctx, rt, action, callID)
}

// dispatch calls the tool on a context detached from the client and
// records what came back.
func (c *call) dispatch(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string) (*Response, error) {
	e := c.e
	e.opts.Metrics.InProgress.Inc()
	defer e.opts.Metrics.InProgress.Dec()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.CallTimeout)
	defer cancel()
	args := c.b.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	began := time.Now()
	result, err := rt.Connector.Call(dctx, rt.Tool, action.Name, args)
	var refused error // the answer of a failed reauthorization: nothing ran
	if connectors.KindOf(err) == connectors.KindUpstreamAuth {
		// The server refused our token before running anything: refresh
		// once (shared with concurrent calls) and retry once.
		if next, rerr := c.reauthorize(dctx, rt, err); next != nil {
			rt = next
			result, err = rt.Connector.Call(dctx, rt.Tool, action.Name, args)
		} else if rerr != err {
			refused = unavailable(rerr)
		}
	}
	dur := time.Since(began)
	// Recording must happen even if the client is gone.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if refused != nil {
		return c.rejected(rctx, rt, action, callID, dur, refused)
	}
	if err != nil {
		kind := connectors.KindOf(err)
		if kind == connectors.KindOutcomeUnknown {
			return c.unknown(rctx, rt, action, callID, dur, err)
		}
		return c.rejected(rctx, rt, action, callID, dur, err)
	}
	outcome := "succeeded"
	if result.IsError {
		outcome = "tool_error"
	}
	respBody := encodeResult(callID, rt.Tool.ID, action.Name, result, dur)
	if c.req.HasKey {
		ok, err := e.opts.Store.Complete(rctx, c.req.AccountID, c.req.Key, c.token, 200, ContentType, respBody)
		if err != nil {
			// The outcome is known but could not be stored: the key stays
			// dispatched and the sweeper will make it outcome_unknown. This
			// caller still learns what happened.
			e.opts.Logger.ErrorContext(ctx, "storing a call outcome failed", "call_id", callID, "error", err)
		} else if !ok {
			// The lease was lost (the sweeper already decided): answer
			// what the row now says, so every caller sees one truth.
			e.log.add(c.entry(rt, action, callID, "outcome_unknown", dur))
			r, err := e.opts.Store.GetIdem(rctx, c.req.AccountID, c.req.Key)
			if err != nil {
				return nil, unavailable(err)
			}
			return c.fromRow(r)
		} else {
			c.cacheOutcome(callID, replaycache.StateSucceeded, 200, ContentType, respBody, c.freshTTL())
		}
	}
	e.opts.Metrics.Calls.WithLabelValues(outcome).Inc()
	e.opts.Metrics.CallDuration.WithLabelValues("first").Observe(time.Since(c.start).Seconds())
	e.log.add(c.entry(rt, action, callID, outcome, dur))
	return &Response{Status: 200, ContentType: ContentType, Body: respBody}, nil
}

// unknown records a dispatched call with no outcome: terminal for its key.
func (c *call) unknown(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string, dur time.Duration, cause error) (*Response, error) {
	e := c.e
	e.opts.Metrics.Calls.WithLabelValues("outcome_unknown").Inc()
	e.log.add(c.entry(rt, action, callID, "outcome_unknown", dur))
	e.opts.Logger.WarnContext(ctx, "call outcome unknown", "call_id", callID, "tool", rt.Tool.ID, "action", action.Name, "error", cause)
	if c.req.HasKey {
		if _, err := e.opts.Store.MarkUnknown(ctx, c.req.AccountID, c.req.Key, c.token); err != nil {
			e.opts.Logger.ErrorContext(ctx, "recording an unknown outcome failed; the sweeper will", "call_id", callID, "error", err)
		}
		c.cacheOutcome(callID, replaycache.StateOutcomeUnknown, 0, "", nil, c.freshTTL())
	}
	return nil, &problem.Error{Code: problem.OutcomeUnknownConflict, Status: 504, Err: cause,
		Message: "The call was sent to the tool and no outcome came back; it will not be run again for this key. Check the tool before trying a new key."}
}

// rejected releases the key of a call the tool refused before running it.
func (c *call) rejected(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string, dur time.Duration, cause error) (*Response, error) {
	e := c.e
	e.opts.Metrics.Calls.WithLabelValues("rejected").Inc()
	e.log.add(c.entry(rt, action, callID, "rejected", dur))
	if c.req.HasKey {
		if _, err := e.opts.Store.Release(ctx, c.req.AccountID, c.req.Key, c.token); err != nil {
			e.opts.Logger.ErrorContext(ctx, "releasing a key failed; it will end as outcome_unknown", "call_id", callID, "error", err)
		}
	}
	return nil, connectorProblem(cause)
}

// connectorProblem maps a pre-effect connector error to its API error.
func connectorProblem(err error) error {
	var ce *connectors.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Kind {
	case connectors.KindUnreachable:
		msg := "The tool's server could not be reached; nothing was sent."
		if ce.Err != nil {
			msg = strings.TrimSuffix(msg, ".") + " (" + rootCause(ce.Err) + ")."
		}
		return &problem.Error{Code: problem.ToolUnreachable, Message: msg, Err: err}
	case connectors.KindUpstreamAuth:
		return &problem.Error{Code: problem.UpstreamAuthFailed, Message: "The tool's server refused our credentials before running anything. " + ce.Message, Err: err}
	case connectors.KindUnknownAction:
		return &problem.Error{Code: problem.NotFound, Message: ce.Message, Err: err}
	case connectors.KindRejected:
		return &problem.Error{Code: problem.InvalidArguments, Message: "The tool refused the request before running it: " + ce.Message,
			Fields: map[string]string{"arguments": ce.Message}, Err: err}
	}
	return &problem.Error{Code: problem.OutcomeUnknownConflict, Status: 504, Message: ce.Message, Err: err}
}

// rootCause is the innermost message of err: "connect: connection refused"
// rather than the whole chain. Dial errors name a host and port, never a
// URL with its query, so no credential can show here.
func rootCause(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "the name " + dns.Name + " does not resolve" // not which resolver said so
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		if _, ok := next.(*egress.BlockedError); ok {
			return next.Error()
		}
		err = next
	}
}

func (c *call) entry(rt *toolconfig.Resolved, action *connectors.Action, callID, outcome string, dur time.Duration) store.CallLog {
	var key *string
	if c.req.HasKey {
		k := c.req.Key
		key = &k
	}
	return store.CallLog{CallID: callID, AccountID: c.req.AccountID, ToolID: rt.Tool.ID, Action: action.Name,
		Outcome: outcome, DurationMS: dur.Milliseconds(), IdempotencyKey: key, CreatedAt: c.start.UTC()}
}

// encodeResult writes the 200 body once; these bytes are what is stored and
// replayed.
func encodeResult(callID string, toolID int64, action string, r connectors.Result, dur time.Duration) []byte {
	content := r.Content
	isError := r.IsError
	if len(content) == 0 {
		content = json.RawMessage("null")
	}
	if len(content) > MaxResult {
		msg, _ := json.Marshal("The tool's result was " + strconv.Itoa(len(content)) + " bytes, over the 8 MiB limit; it was not kept.")
		content = append(append([]byte(`{"error":"result_too_large","message":`), msg...), '}')
		isError = true
	} else if !json.Valid(content) {
		s, _ := json.Marshal(string(content))
		content = s
	}
	var buf bytes.Buffer
	buf.Grow(len(content) + 160)
	buf.WriteString(`{"call_id":`)
	buf.WriteString(strconv.Quote(callID))
	buf.WriteString(`,"tool":`)
	buf.WriteString(strconv.FormatInt(toolID, 10))
	buf.WriteString(`,"action":`)
	a, _ := json.Marshal(action)
	buf.Write(a)
	buf.WriteString(`,"is_error":`)
	buf.WriteString(strconv.FormatBool(isError))
	buf.WriteString(`,"result":`)
	buf.Write(content)
	buf.WriteString(`,"duration_ms":`)
	buf.WriteString(strconv.FormatInt(dur.Milliseconds(), 10))
	buf.WriteString("}\n")
	return buf.Bytes()
}
