package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/quiverhq/quiver/internal/httpserver"
	"github.com/quiverhq/quiver/internal/problem"
)

// RefusalBody renders the envelope of a request the HTTP server refuses
// before routing (a malformed request, oversized headers): bad_request
// whatever the status, since no handler saw it, except for a malformed
// Idempotency-Key, which is invalid_idempotency_key as it would be past
// routing.
func RefusalBody(r httpserver.Refusal) (contentType string, body []byte) {
	p := &problem.Error{Code: problem.BadRequest, Message: r.Message}
	if r.Header == "Idempotency-Key" {
		p = problem.New(problem.InvalidIdempotencyKey, "%s", invalidKeyMessage)
	}
	b, _ := json.Marshal(envelope(p))
	return "application/json; charset=utf-8", b
}

// Refused logs and counts a request the HTTP server refused before
// routing, as observe does for every other, and gives it the X-Request-Id
// every answer carries. Its route is "refused" and its method OTHER: what
// the request named may be malformed, and must not add series.
func (s *Server) Refused(r httpserver.Refusal) http.Header {
	h := RefusalHeader()
	s.Metrics.HTTPRequests.WithLabelValues("refused", "OTHER", strconv.Itoa(r.Status)).Inc()
	s.log.Info("request refused before routing", "request_id", h.Get("X-Request-Id"), "status", r.Status, "reason", r.Message)
	return h
}

// RefusalHeader gives a refused request the X-Request-Id every answer
// carries.
func RefusalHeader() http.Header {
	return http.Header{"X-Request-Id": {newRequestID()}}
}
