// Package metrics defines Quiver's Prometheus metrics on a registry of its
// own (no globals): HTTP requests, and calls by outcome, replays, conflicts,
// in-progress count and latency; and the background events that explain a
// bad hour: OAuth refreshes and revocations, MCP upstream sessions, and
// database sessions Postgres ended. It never labels by anything unbounded or
// secret (no keys, no tool IDs, no account IDs).
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every collector.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequests *prometheus.CounterVec   // route, method, status
	HTTPDuration *prometheus.HistogramVec // route, method
	// MCPToolErrors counts tools/call answers of an agent's MCP endpoint
	// that were Quiver's own errors (answered as tool errors in a 200), by
	// the error code REST would have answered with.
	MCPToolErrors *prometheus.CounterVec // code

	Calls        *prometheus.CounterVec   // outcome: succeeded, tool_error, outcome_unknown, rejected
	Replays      prometheus.Counter       // stored outcomes replayed
	Conflicts    *prometheus.CounterVec   // kind: idempotency_key_reused, request_in_progress, tool_outcome_unknown
	InProgress   prometheus.Gauge         // calls dispatched and not yet answered, on this replica
	CallDuration *prometheus.HistogramVec // phase: first, replay
	Swept        prometheus.Counter       // leases the sweeper turned into outcome_unknown
	CacheErrors  prometheus.Counter       // replay cache (Redis) errors, each degraded to Postgres
	LogDropped   prometheus.Counter       // call log entries dropped (overload, database away)
	LogPurged    prometheus.Counter       // call log entries deleted past QUIVER_CALL_LOG_RETENTION

	OAuthRefreshes     *prometheus.CounterVec // result: RefreshResults
	OAuthRevocations   *prometheus.CounterVec // result: revoked, failed
	MCPSessionsOpened  prometheus.Counter     // pooled upstream MCP sessions opened
	MCPSessionFailures prometheus.Counter     // pooled upstream MCP sessions that failed to open
	MCPSessionsRetired *prometheus.CounterVec // reason: the MCP connector's retire reasons (app wires them)
	DBSessionsEnded    prometheus.Counter     // sessions of the pool Postgres ended
}

// RefreshResults are the values of quiver_oauth_refreshes_total's result
// label; see its Help.
var RefreshResults = []string{"refreshed", "refused", "unrefreshable", "client_rejected", "failed"}

// New returns metrics registered on a new registry, with Go and process
// collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// From a replay (a few microseconds from the in-process near tier, tens
	// through Redis on loopback) to a call that ran into the default 30 s
	// QUIVER_CALL_TIMEOUT: its answer comes a little after 30 s, and a
	// request ends within its lease (timeout plus QUIVER_LEASE_GRACE) and
	// 10 s more, so 60 holds what 30 misses, and le="30" against le="60"
	// tells calls that finished from timeouts.
	buckets := []float64{.00001, .00005, .0001, .0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		Registry: r,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "quiver_http_request_duration_seconds", Help: "HTTP request latency by route and method.", Buckets: buckets,
		}, []string{"route", "method"}),
		MCPToolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_mcp_tool_errors_total", Help: "tools/call answers over agents' MCP endpoints that were Quiver's own errors, by error code.",
		}, []string{"code"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_calls_total", Help: "Dispatched tool calls by outcome, counted where the outcome was recorded: a call whose replica died is counted by the replica whose sweeper recorded it.",
		}, []string{"outcome"}),
		Replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_call_replays_total", Help: "Stored call outcomes replayed for a retried Idempotency-Key.",
		}),
		Conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_call_conflicts_total", Help: "Idempotency-Key conflicts the call endpoint answered 409, by kind (a 409 tool_not_configured is none: it counts only in quiver_http_requests_total).",
		}, []string{"kind"}),
		InProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quiver_calls_in_progress", Help: "Tool calls dispatched and not yet finished on this replica.",
		}),
		CallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "quiver_call_duration_seconds", Help: "Call endpoint latency on this replica: first calls (every dispatched call, whatever its outcome) and replays.", Buckets: buckets,
		}, []string{"phase"}),
		Swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_idempotency_swept_total", Help: "Dispatched calls whose lease ran out, recorded as outcome unknown.",
		}),
		CacheErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_replay_cache_errors_total", Help: "Replay cache errors; each call fell back to the database.",
		}),
		LogDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_call_log_dropped_total", Help: "Call log entries dropped: the writer was behind, or the database refused them for too long.",
		}),
		LogPurged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_call_log_purged_total", Help: "Call log entries deleted by this replica for being older than QUIVER_CALL_LOG_RETENTION.",
		}),
		OAuthRefreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_oauth_refreshes_total", Help: "OAuth token refreshes by result: refreshed (the provider issued a token and it was stored); " +
				"refused (the provider refused the grant with invalid_grant, invalid_scope, unauthorized_client or unsupported_grant_type: the tool went back to its oauth step); " +
				"unrefreshable (the token had no refresh token and had expired or was refused by the tool's server: the tool went back to its oauth step, the provider was not asked); " +
				"client_rejected (the provider refused this server's OAuth client, invalid_client: the grant is kept, the operator must fix the client); " +
				"failed (the provider could not be reached, timed out or answered otherwise, or the new token, or the tool's return to its oauth step, could not be stored: the tool is as it was). " +
				"A refresh another caller or replica made first, and calls that shared one refresh, are not counted.",
		}, []string{"result"}),
		OAuthRevocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_oauth_revocations_total", Help: "OAuth token revocations (RFC 7009) sent to providers when a tool is deleted or reset, or a callback's tool changed meanwhile, one per token (refresh, access), by result: " +
				"revoked (the provider answered 200); failed (it refused or could not be reached, or, once for the tool, the stored token could not be opened and nothing was sent).",
		}, []string{"result"}),
		MCPSessionsOpened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_mcp_sessions_opened_total", Help: "Pooled sessions with upstream MCP servers opened (connected and initialized).",
		}),
		MCPSessionFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_mcp_session_failures_total", Help: "Pooled sessions with upstream MCP servers that failed to open (unreachable, refused, handshake failed or timed out).",
		}),
		MCPSessionsRetired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_mcp_sessions_retired_total", Help: "Pooled upstream MCP sessions retired, by reason: idle (unused for the idle timeout), reconfigured (the tool changed), " +
				"ended (the server or the network ended it, or the server no longer knew it), replaced (the server named another session), " +
				"refused (the server refused the session's credentials), closed (this Quiver shut down). A retired session closes once its calls return.",
		}, []string{"reason"}),
		DBSessionsEnded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quiver_db_sessions_ended_total", Help: "Sessions of the pool Postgres ended (FATAL, SQLSTATE class 57P: a failover, a pooler restarted, pg_terminate_backend), counted per session as each is met. " +
				"Sessions ended for idle_session_timeout, and sessions Postgres refused to open, are not counted.",
		}),
	}
	r.MustRegister(m.HTTPRequests, m.HTTPDuration, m.MCPToolErrors, m.Calls, m.Replays, m.Conflicts, m.InProgress,
		m.CallDuration, m.Swept, m.CacheErrors, m.LogDropped, m.LogPurged,
		m.OAuthRefreshes, m.OAuthRevocations, m.MCPSessionsOpened, m.MCPSessionFailures, m.MCPSessionsRetired, m.DBSessionsEnded)
	// Every series of the call metrics exists from the start, at zero: a
	// rate or an alert over a series that appears with its first event
	// misses that event, and a fresh replica would show none of them.
	for _, outcome := range []string{"succeeded", "tool_error", "outcome_unknown", "rejected"} {
		m.Calls.WithLabelValues(outcome)
	}
	for _, kind := range []string{"idempotency_key_reused", "request_in_progress", "tool_outcome_unknown"} {
		m.Conflicts.WithLabelValues(kind)
	}
	for _, phase := range []string{"first", "replay"} {
		m.CallDuration.WithLabelValues(phase)
	}
	for _, result := range RefreshResults {
		m.OAuthRefreshes.WithLabelValues(result)
	}
	for _, result := range []string{"revoked", "failed"} {
		m.OAuthRevocations.WithLabelValues(result)
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
