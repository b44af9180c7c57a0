// Package metrics defines Quiver's Prometheus metrics on a registry of its
// own (no globals): HTTP requests, and calls by outcome, replays, conflicts,
// in-progress count and latency. It never labels by anything unbounded or
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

	Calls        *prometheus.CounterVec   // outcome: succeeded, tool_error, outcome_unknown, rejected
	Replays      prometheus.Counter       // stored outcomes replayed
	Conflicts    *prometheus.CounterVec   // kind: idempotency_key_reused, request_in_progress, tool_outcome_unknown
	InProgress   prometheus.Gauge         // calls dispatched and not yet answered, on this replica
	CallDuration *prometheus.HistogramVec // phase: first, replay
	Swept        prometheus.Counter       // leases the sweeper turned into outcome_unknown
	CacheErrors  prometheus.Counter       // replay cache (Redis) errors, each degraded to Postgres
	LogDropped   prometheus.Counter       // call log entries dropped (overload, database away)
	LogPurged    prometheus.Counter       // call log entries deleted past QUIVER_CALL_LOG_RETENTION
}

// New returns metrics registered on a new registry, with Go and process
// collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buckets := []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		Registry: r,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quiver_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "quiver_http_request_duration_seconds", Help: "HTTP request latency by route and method.", Buckets: buckets,
		}, []string{"route", "method"}),
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
	}
	r.MustRegister(m.HTTPRequests, m.HTTPDuration, m.Calls, m.Replays, m.Conflicts, m.InProgress,
		m.CallDuration, m.Swept, m.CacheErrors, m.LogDropped, m.LogPurged)
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
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
