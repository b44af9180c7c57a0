package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// statusOf is the one place an error code becomes an HTTP status.
func statusOf(code problem.Code) int {
	switch code {
	case problem.InvalidJSON, problem.InvalidIdempotencyKey, problem.IdempotencyKeyRequired, problem.BadRequest:
		return http.StatusBadRequest
	case problem.Unauthorized:
		return http.StatusUnauthorized
	case problem.Forbidden:
		return http.StatusForbidden
	case problem.NotFound:
		return http.StatusNotFound
	case problem.IdempotencyKeyReused, problem.RequestInProgress, problem.OutcomeUnknownConflict,
		problem.ToolNotConfigured, problem.AlreadyConfigured:
		return http.StatusConflict
	case problem.PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case problem.ValidationError, problem.InvalidArguments:
		return http.StatusUnprocessableEntity
	case problem.RateLimited:
		return http.StatusTooManyRequests
	case problem.ToolUnreachable, problem.UpstreamAuthFailed:
		return http.StatusBadGateway
	case problem.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError writes err as the error envelope and stops the chain.
func (s *Server) writeError(c *gin.Context, err error) {
	p, ok := problem.As(err)
	if !ok {
		if errors.Is(err, store.ErrUnavailable) {
			p = &problem.Error{Code: problem.Unavailable, Message: "The database is unavailable. Retry shortly.", RetryAfter: 1}
		} else if errors.Is(err, store.ErrBadCursor) {
			p = problem.Validation("The cursor is not one this server made.", map[string]string{"cursor": "is invalid"})
		} else {
			s.log.ErrorContext(c.Request.Context(), "internal error", "error", err, "route", c.FullPath())
			p = problem.New(problem.Internal, "Something went wrong on our side; the request ID helps us find it.")
		}
	}
	status := p.Status
	if status == 0 {
		status = statusOf(p.Code)
	}
	body := gin.H{"error": p.Code, "message": p.Message}
	if p.Fields != nil {
		body["fields"] = p.Fields
	}
	for k, v := range p.Extra {
		body[k] = v
	}
	if p.Code == problem.Internal {
		body["request_id"] = logging.RequestID(c.Request.Context())
	}
	if p.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(p.RetryAfter))
		if p.Code == problem.RequestInProgress {
			body["retry_after"] = p.RetryAfter
		}
	}
	c.Abort()
	c.JSON(status, body)
}
