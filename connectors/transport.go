package connectors

import (
	"context"
	"errors"

	"github.com/quiverhq/quiver/internal/egress"
)

// HTTPFailure classifies an error returned by an HTTP round trip to a tool:
// a failure to connect (refused, blocked, DNS) means nothing was sent and is
// KindUnreachable; anything later (a timeout, a reset connection, a body cut
// short) may have reached the tool and is KindOutcomeUnknown.
func HTTPFailure(err error) *Error {
	if egress.IsConnectFailure(err) {
		return Errorf(KindUnreachable, err, "the tool's server could not be reached")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Errorf(KindOutcomeUnknown, err, "the tool did not answer in time")
	}
	return Errorf(KindOutcomeUnknown, err, "the connection to the tool was lost before it answered")
}
