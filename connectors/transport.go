package connectors

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/quiverhq/quiver/internal/egress"
)

// HTTPFailure classifies an error returned by an HTTP round trip to a tool:
// a failure to connect (refused, blocked, DNS) means nothing was sent and is
// KindUnreachable; anything later (a timeout, a reset connection, a body cut
// short) may have reached the tool and is KindOutcomeUnknown. Send
// classifies more precisely a round trip it watched.
func HTTPFailure(err error) *Error {
	if egress.IsConnectFailure(err) {
		return Errorf(KindUnreachable, err, "the tool's server could not be reached")
	}
	return maybeSent(err)
}

// maybeSent is the failure of a request that may have reached the tool.
func maybeSent(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return Errorf(KindOutcomeUnknown, err, "the tool did not answer in time")
	}
	if undecodable(err) {
		return Errorf(KindOutcomeUnknown, err, "the tool's answer came gzip-compressed and could not be decompressed (corrupt or not gzip)")
	}
	return Errorf(KindOutcomeUnknown, err, "the connection to the tool was lost before it answered")
}

// Send sends req with client and returns the response, or an *Error whose
// kind says from how far the round trip got whether anything may have been
// sent. It watches the round trip through an httptrace.ClientTrace:
//
//	transport checks the request    GetConn    dial, TLS    GotConn    write, read
//	|------------------------------|----------|------------|----------|------------>
//	  KindRejected                   KindUnreachable                    KindOutcomeUnknown
//
// net/http writes a request only on a connection it has handed to it, and
// reports the handing over (GotConn, for HTTP/1 and HTTP/2 alike) before it
// writes anything; a failure before that sent nothing. Before the transport
// even looks for a connection (GetConn) it refuses what it cannot send (a
// header value with a line break or control character, an invalid header
// name or method, a URL without a host or with another scheme): the request
// is unusable, and the failure is KindRejected. Between the two, finding a
// connection failed (refused, blocked, DNS, TLS, the deadline): the failure
// is KindUnreachable. Once a connection was handed over, even if a later
// retry of the transport's own (or a redirect) then failed to connect, the
// tool may have run: KindOutcomeUnknown.
//
// Only an *http.Transport is known to report to the trace: with any other
// RoundTripper, Send classifies as HTTPFailure does.
//
// The error shows the URL as ShownURL does (HideURLs), never what of its
// query, user information or path may carry a credential or a call's
// arguments: it ends up in logs.
//
// A request Send is given goes out at most once (SentOnce).
func Send(client *http.Client, req *http.Request) (*http.Response, error) {
	req = SentOnce(req)
	if !reportsTrace(client) {
		resp, err := client.Do(req)
		if err != nil {
			return nil, HTTPFailure(HideURLs(err))
		}
		return resp, nil
	}
	var lookedForConn, gotConn atomic.Bool
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { lookedForConn.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	}
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	err = HideURLs(err)
	switch {
	case err == nil:
		return resp, nil
	case gotConn.Load():
		return nil, maybeSent(err)
	case egress.IsConnectFailure(err):
		return nil, Errorf(KindUnreachable, err, "the tool's server could not be reached")
	case req.Context().Err() != nil || isTimeout(err):
		// The call's deadline, or its cancellation, came first.
		return nil, Errorf(KindUnreachable, err, "the tool's server could not be reached in time")
	case lookedForConn.Load():
		return nil, Errorf(KindUnreachable, err, "no connection to the tool's server could be made")
	}
	// The message names the reason without the URL, which may carry a
	// query the caller would rather not see echoed; net/http never puts a
	// header's value in its errors.
	reason := err
	if ue, ok := errors.AsType[*url.Error](err); ok {
		reason = ue.Err
	}
	return nil, Errorf(KindRejected, err, "the request cannot be sent as it is (%v); nothing was sent", reason)
}

// SentOnce returns req, or a copy, that net/http's transport will not send
// a second time on its own. The transport re-sends a request when a
// kept-alive connection breaks before the answer comes, if it takes the
// request for safe to repeat: a GET, HEAD, OPTIONS or TRACE, or a request
// of any method with an Idempotency-Key or X-Idempotency-Key header (and
// a body it can make again). Such a header in a call's arguments is the
// upstream API's business, and the tool may have acted on the first
// request. The transport looks for those two header keys spelt exactly so
// (http.Header's canonical form); the copy carries them in lower case,
// which is the same header on the wire (field names are case-insensitive,
// and HTTP/2 sends them so anyway), and everything else as it was.
// TestNotSentTwice, in connectors/httprequest, fails if a Go release
// changes how the transport looks.
func SentOnce(req *http.Request) *http.Request {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return req
	}
	var out *http.Request
	for _, name := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
		values, ok := req.Header[name]
		if !ok {
			continue
		}
		if out == nil {
			out = req.Clone(req.Context())
		}
		lower := strings.ToLower(name)
		out.Header[lower] = append(out.Header[lower], values...)
		delete(out.Header, name)
	}
	if out == nil {
		return req // not replayable as it is
	}
	return out
}

// reportsTrace reports whether client's transport is an *http.Transport,
// which reports a round trip's progress to an httptrace.ClientTrace.
func reportsTrace(client *http.Client) bool {
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	_, ok := rt.(*http.Transport)
	return ok
}

// undecodable reports whether err is net/http's transparent gzip decoding
// failing on a body that is corrupt or no gzip at all: the tool answered,
// with bytes that cannot be read.
func undecodable(err error) bool {
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) {
		return true
	}
	_, ok := errors.AsType[flate.CorruptInputError](err)
	return ok
}

func isTimeout(err error) bool {
	t, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	return ok && t.Timeout()
}
