package api

import (
	"errors"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// writeError writes err as the error envelope and stops the chain.
func (s *Server) writeError(c *gin.Context, err error) {
	p, ok := problem.As(err)
	if !ok {
		if errors.Is(err, store.ErrInterrupted) && c.Request.Method != "GET" && c.Request.Method != "HEAD" {
			// Not 503: clients retry that as the server's word that nothing
			// was done, and a create retried after a lost commit would make
			// a second one.
			s.log.ErrorContext(c.Request.Context(), "database connection failed mid-write", "error", err, "route", c.FullPath())
			p = problem.New(problem.Internal, "The database connection failed while this change was being saved, so it may or may not have been applied; read it back before retrying.")
		} else if errors.Is(err, store.ErrWritesInFlight) {
			p = &problem.Error{Code: problem.Unavailable, RetryAfter: 1,
				Message: "This list waits for the writes in flight when it was asked for, and they did not end in time: the database is slow or busy. Retry shortly."}
		} else if errors.Is(err, store.ErrUnavailable) {
			p = &problem.Error{Code: problem.Unavailable, Message: "The database is unavailable. Retry shortly.", RetryAfter: 1}
		} else if errors.Is(err, store.ErrBadCursor) {
			p = problem.Validation(listParamsInvalid, map[string]string{"cursor": cursorMessage(err)})
		} else {
			s.log.ErrorContext(c.Request.Context(), "internal error", "error", err, "route", c.FullPath())
			p = problem.New(problem.Internal, "Something went wrong on our side; the request ID helps us find it.")
		}
	}
	status := p.HTTPStatus()
	body := envelope(p)
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

// envelope is the error body of p: its code, message, fields and extras.
func envelope(p *problem.Error) gin.H {
	body := gin.H{"error": p.Code, "message": p.Message}
	if p.Fields != nil {
		body["fields"] = p.Fields
	}
	for k, v := range p.Extra {
		body[k] = v
	}
	return body
}
