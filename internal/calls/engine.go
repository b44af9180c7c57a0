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
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/quiverhq/quiver/connectors"
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
	Complete(ctx context.Context, accountID int64, key, leaseToken string, status int, contentType string, body []byte, entry *store.CallLog, earlier ...store.CallLog) (bool, error)
	MarkUnknown(ctx context.Context, accountID int64, key, leaseToken string, entry *store.CallLog, earlier ...store.CallLog) (bool, error)
	Release(ctx context.Context, accountID int64, key, leaseToken string, entry *store.CallLog, earlier ...store.CallLog) (bool, error)
	SweepExpiredLeases(ctx context.Context) ([]store.SweptKey, error)
	PurgeExpiredKeys(ctx context.Context) (int64, error)
	PurgeCalls(ctx context.Context, retention time.Duration) (int64, error)
	InsertCalls(ctx context.Context, cs []store.CallLog) error
	ListCalls(ctx context.Context, accountID int64, toolID *int64, p store.Page) ([]store.CallLog, string, error)
}

var _ Store = (*store.Store)(nil)

// Tools resolves connected tools; *toolconfig.Service implements it.
type Tools interface {
	Resolve(ctx context.Context, accountID, id int64) (*toolconfig.Resolved, error)
	ResolveName(ctx context.Context, accountID int64, name string) (int64, error)
	// AtHand is Resolve's answer when it needs no waiting, or false.
	AtHand(accountID, id int64) (*toolconfig.Resolved, bool)
	// Invalidate drops this replica's cached copy of a tool.
	Invalidate(accountID, id int64)
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
	// CallLogRetention is how long call log entries are kept; zero keeps
	// every entry.
	CallLogRetention time.Duration
	// RateLimit is calls per second per account on this replica; zero
	// means unlimited. RateBurst is the bucket size (zero: twice the rate).
	RateLimit float64
	RateBurst int
	// Reauth refreshes a refused OAuth token for one retry; nil: no retry.
	Reauth Reauthorizer
	// DatabaseDown reports whether the database is known to be down
	// (store.Store.Down); nil: never. A call without a key, which may find
	// its API key and tool in caches and meet no database before it is
	// dispatched, is refused then: with the database down nothing is
	// dispatched (API.md). A keyed call's reservation meets the database.
	DatabaseDown func() bool
}

// Engine runs calls.
type Engine struct {
	opts Options
	// cacheDownUntil (unix nanoseconds) skips the replay cache for a moment
	// after it failed, so a dead Redis costs one timeout, not one per call.
	cacheDownUntil atomic.Int64
	limit          *limiter
	log            *callLog
	// schemas holds each compiled schema by its text. A map under a lock,
	// not a sync.Map: looking up string(raw) in a map copies nothing, and
	// a sync.Map's key, an interface, is a copy of the schema per call.
	schemasMu sync.RWMutex
	schemas   map[string]*compiledSchema
	// sweepFailing counts the sweeps that failed in a row, so a database
	// that is away is logged when the run begins and ends, not every tick.
	sweepFailing atomic.Int64
}

// New returns an Engine. Start its background work with Run.
func New(opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	e := &Engine{opts: opts, limit: newLimiter(opts.RateLimit, opts.RateBurst)}
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
	// ReadOnly keys may call only actions annotated read-only.
	ReadOnly bool
	// UncountedReuse leaves an idempotency_key_reused answer out of the
	// conflict metric, for a caller that may answer it otherwise (the agent
	// endpoint sends a retry whose tool name moved on to the tool its key
	// was first used with) and counts the conflict it does answer with
	// CountConflict: one call, one count.
	UncountedReuse bool
}

// Response is a call's answer: the exact bytes to send.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	Replayed    bool
	// Answer is Body's members saying what the tool answered, for a 200
	// this call dispatched, so a caller that re-encodes them (the agent
	// endpoint) need not decode Body. Nil otherwise: decode Body.
	Answer *Answer
}

// Answer is the members of a 200 call body that say what the tool answered.
type Answer struct {
	CallID     string          `json:"call_id"`
	IsError    bool            `json:"is_error"`
	Result     json.RawMessage `json:"result"`
	ResultType string          `json:"result_type"`
	// StructuredContent is the tool's structured content when it is not
	// result itself (connectors.Result's Structured); nil otherwise.
	StructuredContent json.RawMessage `json:"structured_content"`
}

// body is the call request's JSON: its members "tool", "action" and
// "arguments", matched by their exact names (any other member, "TOOL"
// included, is unknown and ignored, as API.md says).
type body struct {
	ToolID    int64  // set when tool is an integer
	ToolName  string // set when tool is a catalog name
	Action    string
	Arguments json.RawMessage // as sent; nil when absent
	// problem is the 422 for members missing or of the wrong type. It is
	// answered only after the key was looked up, so that a key already
	// used answers 409 idempotency_key_reused whatever the new body holds.
	problem error
}

// decodeBody reads the call members picked out by canonicalCall, whose
// values are valid JSON.
func decodeBody(m callMembers) body {
	var b body
	var invalid map[string]string // a message per bad member
	var sentence string           // the message when one member is bad
	bad := func(field, msg, why string) {
		if invalid == nil {
			invalid = map[string]string{}
		}
		invalid[field], sentence = msg, why
	}
	const notTool = "must be an integer ID or a catalog name"
	switch {
	case m.tool == nil || string(m.tool) == "null":
		bad("tool", "is required: the tool's integer ID or catalog name", "The call names no tool.")
	case m.tool[0] == '"':
		// A name with U+0000 names nothing, and Postgres cannot take it.
		if json.Unmarshal(m.tool, &b.ToolName) != nil || b.ToolName == "" || strings.IndexByte(b.ToolName, 0) >= 0 {
			bad("tool", notTool, "The tool must be an integer ID or a catalog name.")
		}
	default:
		// A number's literal text: 11, not 11.0, 1.1e1 or one over int64.
		id, err := strconv.ParseInt(string(m.tool), 10, 64)
		if err != nil {
			bad("tool", notTool, "The tool must be an integer ID or a catalog name.")
		}
		b.ToolID = id
	}
	switch {
	case m.action == nil || string(m.action) == "null":
		bad("action", "is required", "The call names no action.")
	case m.action[0] == '"':
		if json.Unmarshal(m.action, &b.Action) != nil || b.Action == "" {
			bad("action", "is required", "The call names no action.")
		}
	default:
		bad("action", "must be a string", "The action must be a string.")
	}
	if m.arguments != nil {
		b.Arguments = json.RawMessage(m.arguments)
	}
	switch len(invalid) {
	case 0:
	case 1:
		b.problem = problem.Validation(sentence, invalid)
	default:
		b.problem = problem.Validation("The call's tool and action are not valid.", invalid)
	}
	return b
}

// Call runs one call. Errors are *problem.Error for every answer that is not
// a 200; any other error is a bug or an unavailable database.
func (e *Engine) Call(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	if err := e.limit.allow(req.AccountID); err != nil {
		return nil, err
	}
	canon, members, err := canonicalCall(req.Body)
	if err != nil {
		return nil, &problem.Error{Code: problem.InvalidJSON, Message: "The request body is not valid JSON: " + err.Error() + ".", Err: err}
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, problem.New(problem.InvalidJSON, "The request body must be a JSON object.")
	}
	if members.lone { // the tool would get U+FFFD in its place
		return nil, ErrLoneSurrogate
	}
	c := &call{e: e, req: req, b: decodeBody(members), start: start}
	if req.HasKey {
		c.fp, c.token = Fingerprint(canon), newToken()
		if req.ReadOnly {
			// Before the key is looked up: a read-only key gets no answer
			// of an action it may not call, a replay included.
			if err := c.readOnlyForbidden(ctx); err != nil {
				return nil, err
			}
		}
		if resp, err, done := c.lookup(ctx); done {
			return resp, err
		}
	}
	resp, err := c.run(ctx)
	if c.locked {
		e.cacheDo(ctx, func(ctx context.Context) error { return e.opts.Cache.Unlock(ctx, req.AccountID, req.Key, c.token) })
	}
	return resp, err
}

// call is the state of one Call.
type call struct {
	e      *Engine
	req    Request
	b      body
	fp     []byte // the body's fingerprint; only a keyed call has one
	token  string
	locked bool // this call holds the cache lock
	start  time.Time
	// leaseUntil is when this call's lease ends at the earliest: Lease
	// after the moment before Reserve, whose lease begins later on the
	// database's clock.
	leaseUntil time.Time
	// What target found, once targeted.
	targeted  bool
	rt        *toolconfig.Resolved
	action    *connectors.Action
	targetErr error
	// outcome is the outcome of a keyed call whose tool answered
	// ("succeeded", "tool_error"), once it is being stored; "" before.
	outcome string
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
	return c.fromRow(ctx, r)
}

// readOnlyForbidden refuses a read-only key's call of an action known not
// to be annotated read-only. What it cannot tell (a body with members
// missing or of the wrong type, a tool gone or not configured, a listing
// that failed) is left to the lookup and the run, as for any key: a key
// already used answers as stored, whatever the tool has become, unless the
// key's row records that its action was not read-only (fromEntry, fromRow).
func (c *call) readOnlyForbidden(ctx context.Context) error {
	if c.b.problem != nil {
		return nil
	}
	if _, action, err := c.target(ctx); err == nil && !ReadOnlyAction(action) {
		return forbiddenToReadOnly(action)
	}
	return nil
}

func forbiddenToReadOnly(a *connectors.Action) error {
	return problem.New(problem.Forbidden, "This API key is read-only, and action %q is not annotated read-only.", a.Name)
}

// forbiddenReplay refuses a read-only key every answer under a key whose
// action, when the key was reserved, was not annotated read-only: its
// replay, and its 409s, since such a key should learn nothing of the call.
func forbiddenReplay(action string) error {
	return problem.New(problem.Forbidden, "This API key is read-only, and action %q was not annotated read-only when this Idempotency-Key was used.", action)
}

func unavailable(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return &problem.Error{Code: problem.Unavailable, Message: "The database is unavailable; nothing was run. Retry shortly.", Err: err, RetryAfter: 1}
	}
	return err
}

// ReadOnlyAction reports whether a read-only API key may call action a:
// whether a is annotated read-only. The engine refuses a read-only key
// any other action (forbidden); the agent MCP endpoint lists only these
// to such a key.
func ReadOnlyAction(a *connectors.Action) bool {
	return a.Annotations != nil && a.Annotations.ReadOnlyHint != nil && *a.Annotations.ReadOnlyHint
}

// readOnlyRecord is ReadOnlyAction as a key's row and cached outcome
// record it.
func readOnlyRecord(a *connectors.Action) *bool {
	return replaycache.Flag(ReadOnlyAction(a))
}

// run resolves, checks, reserves, dispatches and records. A keyed call
// whose reservation finds its tool deleted or changed since this replica
// cached it (another replica's change, within QUIVER_CACHE_TTL) resolves
// the tool again and runs on it as it is, or answers as it now must.
func (c *call) run(ctx context.Context) (*Response, error) {
	resp, err := c.runOnce(ctx)
	if errors.Is(err, store.ErrToolChanged) {
		c.e.opts.Tools.Invalidate(c.req.AccountID, c.rt.Tool.ID)
		c.targeted = false
		if resp, err = c.runOnce(ctx); errors.Is(err, store.ErrToolChanged) {
			err = &problem.Error{Code: problem.Unavailable, RetryAfter: 1, Err: err,
				Message: "The tool changed while this call was getting ready; nothing was sent. Retry."}
		}
	}
	return resp, err
}

func (c *call) runOnce(ctx context.Context) (*Response, error) {
	e := c.e
	rt, action, err := c.target(ctx)
	if err == nil && c.req.ReadOnly && !ReadOnlyAction(action) {
		err = forbiddenToReadOnly(action)
	}
	if err == nil && !action.Retryable && !c.req.HasKey {
		err = problem.New(problem.IdempotencyKeyRequired, "Action %q is not retryable: call it with an Idempotency-Key header.", action.Name)
	}
	if err == nil {
		err = e.checkArguments(ctx, action, c.b.Arguments)
	}
	if err != nil {
		return c.rejectBeforeReserve(ctx, unavailable(err))
	}
	if !c.req.HasKey && e.opts.DatabaseDown != nil && e.opts.DatabaseDown() {
		return nil, unavailable(store.ErrUnavailable)
	}
	callID := "c_" + ulid.Make().String()
	if c.req.HasKey {
		rec := &store.IdemRecord{AccountID: c.req.AccountID, Key: c.req.Key, Fingerprint: c.fp, LeaseToken: &c.token,
			ToolID: rt.Tool.ID, Action: action.Name, ReadOnly: readOnlyRecord(action), CallID: callID, ToolVersion: rt.Tool.Version}
		if err := e.timeToRun(ctx); err != nil {
			return nil, err // nothing reserved yet
		}
		c.leaseUntil = time.Now().Add(e.opts.Lease)
		rctx, cancel := e.reserving(ctx)
		existing, err := e.opts.Store.Reserve(rctx, rec, e.opts.Lease, e.opts.IdempotencyTTL)
		cancel()
		if err != nil {
			if errors.Is(err, store.ErrInterrupted) {
				c.releaseUnsure(ctx, callID)
			}
			if errors.Is(err, store.ErrToolChanged) {
				return nil, err // nothing written: run resolves the tool again
			}
			return nil, unavailable(err)
		}
		if existing != nil {
			return c.fromRow(ctx, existing)
		}
	}
	if err := e.timeToRun(ctx); err != nil {
		return c.notStarted(ctx, callID, err)
	}
	return c.dispatch(ctx, rt, action, callID)
}
